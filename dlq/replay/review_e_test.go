package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// stoppingReval allows when the claim judges; at the send-time question it
// is the worker that stops (its context is cancelled while the request is
// out), and the answer is the context's error, as NATSRevalidator's
// RequestWithContext returns it.
type stoppingReval struct {
	calls int
	stop  context.CancelFunc
}

func (r *stoppingReval) Revalidate(ctx context.Context, _ replay.RevalidateQuery) (bool, string, error) {
	r.calls++
	if r.calls == 1 {
		return true, "", nil
	}
	r.stop()
	<-ctx.Done()
	return false, "", ctx.Err()
}

// TestWorkerStopDuringSendRevalidationReleases: a worker stopping
// (deploy, SIGTERM) while it asks the owning service right before the
// send releases the job to the next claim, as every other stop does
// ("released: the worker is stopping"), its attempt unmarked. Before, it
// was blocked for good: "revalidation got no answer: context canceled".
func TestWorkerStopDuringSendRevalidationReleases(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id := b.seedItem(t, "accounts.permission_grant", "reval-stop", nats.Header{dlq.HeaderPrincipal: {"user:7"}}, `{"grant":"admin"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	d, err := b.replays.Approve(context.Background(), req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	reval := &stoppingReval{stop: cancel}
	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond}, reval)
	_, _ = w.RunOnce(ctx) // stopped mid-claim
	require.Equal(t, 2, reval.calls, "asked when judged and again before the send")
	j := b.job(t, req.ID, id)
	assert.Zero(t, b.publishedAs(t, "reval-stop"))
	assert.Equal(t, "pending", j.State, "a stop is not the owning service's no: %s", j.Result)
	assert.Nil(t, j.FirstAttemptAt)
}

// TestRightsLapseBoundaryIsNotALivelock: the judge (StillAllowedUntil)
// and the send loop (rightsLapsed) agree on the instant an entry is MaxAge
// old: lapsed. With the authority's clock held at that instant, the claim
// judges without the groups and the job ends (blocked). Before, the judge
// counted the entry fresh with a lapse of now and the send loop released
// the job, claim after claim.
func TestRightsLapseBoundaryIsNotALivelock(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "lapse-edge-1"
	id := b.seedItem(t, "email.send", msgID, nats.Header{dlq.HeaderOperationID: {"op-" + msgID}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	var first time.Time
	for _, who := range []quarantine.Actor{oncall, approver1} {
		e, err := b.auth.Directory.Lookup(ctx, who.Issuer, who.Subject)
		require.NoError(t, err)
		if first.IsZero() || e.SeenAt.Before(first) {
			first = e.SeenAt
		}
	}
	auth := b.auth
	auth.MaxAge = time.Hour
	edge := first.Add(auth.MaxAge)
	auth.Now = func() time.Time { return edge }
	w := replay.NewWorker(b.replays, b.js, auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute,
		Retry: time.Millisecond}, b.log)
	var j jobRow
	for range 5 {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		j = b.job(t, req.ID, id)
		if j.State != "pending" {
			break
		}
	}
	assert.NotEqual(t, "pending", j.State, "released claim after claim at the lapse instant: %s", j.Result)
}

// TestRequestPageSaysWhatTheBrokerDidNotStore: the request page itself
// (Service.View, what a reload or a browser without JavaScript shows)
// counts the items the broker did not store, as the polled fragment
// (Service.Progress) does. Before, it appeared only after the first poll.
func TestRequestPageSaysWhatTheBrokerDidNotStore(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, MaxMsgs: 1, Discard: jetstream.DiscardNew,
		Duplicates: 200 * time.Millisecond})
	_, err := b.js.Publish(ctx, "events.filler", []byte("fills the stream"))
	require.NoError(t, err)
	id := b.seedItem(t, "search.index_update", "full-view-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	wait.Until(t, "the broker to refuse the publish", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return strings.HasPrefix(b.job(t, req.ID, id).Result, replaypolicy.NotSentLead)
	})
	p, err := b.replays.Progress(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, 1, p.NotStored)
	v, err := b.replays.View(ctx, req.ID, oncall, replay.ViewOptions{Items: 10})
	require.NoError(t, err)
	assert.Equal(t, p.NotStored, v.Progress.NotStored, "the page and its polled fragment disagree")
}

// ctxReval allows until stopAt calls were made; that call stops the
// worker, and from then on every answer is the context's error (as
// NATSRevalidator returns it for a cancelled context, at once).
type ctxReval struct {
	calls, stopAt int
	stop          context.CancelFunc
}

func (r *ctxReval) Revalidate(ctx context.Context, _ replay.RevalidateQuery) (bool, string, error) {
	r.calls++
	if r.calls == r.stopAt {
		r.stop()
	}
	if err := ctx.Err(); err != nil {
		return false, "", err
	}
	return true, "", nil
}

// TestWorkerStopBlocksNoRevalidateItem: a worker
// stopped while it judges a claim of revalidate items (stopAt 1: the
// first question) or while it sends them (stopAt 4: the first send-time
// question) leaves them to the next claim. Before, every item asked after
// the stop was blocked for good ("revalidation got no answer: context
// canceled"): a deploy in the middle of a bulk replay blocked the rest of
// the claim, up to Batch items.
func TestWorkerStopBlocksNoRevalidateItem(t *testing.T) {
	t.Parallel()
	for _, stopAt := range []int{1, 4} {
		b := setupReplay(t)
		ctx, cancel := context.WithCancel(context.Background())
		var ids []int64
		for i := range 3 {
			ids = append(ids, b.seedItem(t, "accounts.permission_grant", fmt.Sprintf("reval-stop-%d-%d", stopAt, i),
				nats.Header{dlq.HeaderPrincipal: {"user:7"}}, `{"grant":"admin"}`))
		}
		req := b.request(t, ids, replay.SubmitInput{})
		d, err := b.replays.Approve(context.Background(), req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.True(t, d.Ready)
		_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, req.ID) // a backlog: every job due
		require.NoError(t, err)
		w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond}, &ctxReval{stopAt: stopAt, stop: cancel})
		_, _ = w.RunOnce(ctx)
		cancel()
		for _, id := range ids {
			j := b.job(t, req.ID, id)
			t.Logf("stop at %d: job %d %s: %s", stopAt, id, j.State, j.Result)
			assert.NotEqual(t, "blocked", j.State, "stop at question %d: %s", stopAt, j.Result)
		}
	}
}

// slowReval answers only when its caller gives up (a service slower than
// the time left), with the context's error, as NATSRevalidator does.
type slowReval struct{}

func (slowReval) Revalidate(ctx context.Context, _ replay.RevalidateQuery) (bool, string, error) {
	<-ctx.Done()
	return false, "", ctx.Err()
}

// TestRevalidationCutByTheClaimsDeadlineReleases: the
// judge gathers facts under a deadline of the claim's until ("a slow
// service cannot hold the judging past the part of the lease a claim
// publishes in"; a job not judged by then is released). A revalidation
// still out when that deadline comes is cut by it, and the item is
// released to the next claim. Before, it was blocked for good
// ("revalidation got no answer: context deadline exceeded"): the worker's
// own deadline was read as the service's silence.
func TestRevalidationCutByTheClaimsDeadlineReleases(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "accounts.permission_grant", "reval-deadline", nats.Header{dlq.HeaderPrincipal: {"user:7"}}, `{"grant":"admin"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond, Lease: 1500 * time.Millisecond}, slowReval{})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	j := b.job(t, req.ID, id)
	assert.Equal(t, "pending", j.State, "the claim ran out of time, the service did not say no: %s", j.Result)
}

// TestEvictsNamesOnlyLimitsThatPushMessagesOut: the limits that remove a
// message before it ages out (so a broker restart forgets its id) are the
// last N per subject, unless the stream refuses new ones per subject
// instead, a count or size with discard old, and rollups (a message with
// Nats-Rollup purges those before it) where purges are allowed; discard
// new refuses rather than evicts, age alone evicts nothing inside the
// window, and a stream that denies purges applies no rollup.
func TestEvictsNamesOnlyLimitsThatPushMessagesOut(t *testing.T) {
	for _, tt := range []struct {
		cfg  jetstream.StreamConfig
		want string
	}{
		{jetstream.StreamConfig{MaxAge: time.Hour}, ""},
		{jetstream.StreamConfig{MaxMsgsPerSubject: 1}, "keeps the last 1 per subject"},
		{jetstream.StreamConfig{MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, DiscardNewPerSubject: true}, ""},
		{jetstream.StreamConfig{MaxMsgs: 100, MaxBytes: 1 << 20}, "keeps the last 100 messages, keeps the last 1048576 bytes"},
		{jetstream.StreamConfig{MaxMsgs: 100, MaxBytes: 1 << 20, Discard: jetstream.DiscardNew}, ""},
		{jetstream.StreamConfig{AllowRollup: true}, "allows rollups: allow_rollup_hdrs lets any message with a Nats-Rollup header purge those before it"},
		{jetstream.StreamConfig{MaxMsgsPerSubject: 1, AllowRollup: true},
			"keeps the last 1 per subject, allows rollups: allow_rollup_hdrs lets any message with a Nats-Rollup header purge those before it"},
		{jetstream.StreamConfig{AllowRollup: true, DenyPurge: true}, ""},
		{jetstream.StreamConfig{DenyPurge: true, MaxAge: time.Hour}, ""},
	} {
		assert.Equal(t, tt.want, replay.Evicts(tt.cfg), "%+v", tt.cfg)
	}
}
