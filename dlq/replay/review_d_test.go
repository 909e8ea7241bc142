package replay_test

import (
	"context"
	"strings"
	"sync/atomic"
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

// TestOwnRetryUnderSkewedClocksIsReconciled: the PubAck of a
// first publish the broker stored is lost; the retry is answered
// Duplicate, and the message the broker keeps is this replay's own. But
// OursKept compares the kept message's time (the broker's clock) with
// first_published_at (the database's clock, the gate's now()), allowing
// only REPLAY_WINDOW_MARGIN (1 s) between them. With the database's clock
// 5 s ahead of the broker's (simulated by moving first_published_at on by
// 5 s, as a database 5 s ahead would have written it), the replay's own
// publish fails OursKept's time test. It needs reconciliation: deferring
// it (as before) unmarked its attempt, and once the broker's window had
// passed it was published again and stored a second time, the item
// "replayed" with two effects.
func TestOwnRetryUnderSkewedClocksIsReconciled(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const window = 3 * time.Second
	ev := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: window})
	cfg := b.config(t)
	cfg.WindowMargin = time.Second // the default
	svc := replay.New(b.db.Pool, cfg)
	id := b.seedItem(t, "search.index_update", "skew-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := replay.NewWorker(svc, b.js, b.auth, nil, replay.WorkerConfig{Retry: 20 * time.Millisecond, AckTimeout: time.Minute, Poll: 20 * time.Millisecond}, b.log)
	loseAcks(w, 1)
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "unknown", b.job(t, req.ID, id).State)
	require.Equal(t, 1, copiesOf(t, ev, "skew-1"), "the first publish was stored")

	// The database's clock is 5 s ahead of the broker's.
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET first_published_at = first_published_at + interval '5 seconds'
        WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, id)
	require.NoError(t, err)

	var j jobRow
	wait.Until(t, "the job to end", 2*time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		j = b.job(t, req.ID, id)
		return j.State != "unknown" && j.State != "pending" && j.State != "deferred"
	})
	assert.Equal(t, 1, copiesOf(t, ev, "skew-1"), "the target stores the replay once (job %s, %d deferrals: %s)", j.State, j.Deferrals, j.Result)
	assert.Equal(t, "needs_reconciliation", j.State, "ours but for the clocks: a person decides (%s)", j.Result)
}

// TestEvictingLimitsStreamUnknownOutcomeNeedsReconciliation: a limits
// stream that removes messages itself (here MaxMsgsPerSubject 1, a
// last-value stream; MaxMsgs/MaxBytes with DiscardOld alike) forgets their
// ids when the broker restarts, as interest, work-queue and memory streams
// do. So a publish to it whose PubAck is lost is not retried: it needs
// reconciliation at once. Before, the retry went: a newer message on the
// subject evicted the replay, NATS restarted inside the duplicate window,
// and the retry was stored again, over the newer message.
func TestEvictingLimitsStreamUnknownOutcomeNeedsReconciliation(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	o := startOwnNATS(t, b)
	st, err := o.js.CreateStream(ctx, jetstream.StreamConfig{Name: "LAST", Subjects: []string{"events.>"}, MaxMsgsPerSubject: 1,
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	require.NoError(t, err)
	const subject = "events.acme.search.index_update"
	id := b.seedItem(t, "search.index_update", "lv-1", nats.Header{dlq.HeaderOriginalSubject: {subject}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := o.worker(b, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	j := b.job(t, req.ID, id)
	require.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "keeps the last 1 per subject")
	require.Equal(t, 1, copiesOf(t, st, "lv-1"), "the first publish was stored")

	m := nats.NewMsg(subject)
	m.Header.Set(dlq.HeaderNatsMsgID, "newer-state")
	m.Data = []byte(`{"n":2}`)
	_, err = o.js.PublishMsg(ctx, m)
	require.NoError(t, err)
	require.Equal(t, 0, copiesOf(t, st, "lv-1"), "the newer message evicted the replay")
	o.stop(t)
	o.start(t)

	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	j = b.job(t, req.ID, id)
	assert.Equal(t, "needs_reconciliation", j.State, "a person decides; nothing is retried (%s)", j.Result)
	st, err = o.js.Stream(ctx, "LAST")
	require.NoError(t, err)
	assert.Equal(t, 0, copiesOf(t, st, "lv-1"), "stored again after a newer message replaced it (job %s: %s)", j.State, j.Result)
	assert.Equal(t, 1, copiesOf(t, st, "newer-state"), "the newer message is still the subject's last")
}

// revalStub answers every revalidation with allow.
type revalStub struct{ allow atomic.Bool }

func (r *revalStub) Revalidate(context.Context, replay.RevalidateQuery) (bool, string, error) {
	if r.allow.Load() {
		return true, "", nil
	}
	return false, "the principal's grant was revoked", nil
}

// TestRevalidationDeniedMidClaimPublishesNothing: the owning service
// allows a revalidate item when the claim judges it, and revokes the
// principal's authority before the publish (the claim may publish for up
// to two thirds of its lease after judging). The worker asks the service
// again right before the send, and the item is blocked, unpublished.
// Before, it was asked only when the claim judged it, and the item was
// published after the service said no.
func TestRevalidationDeniedMidClaimPublishesNothing(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "accounts.permission_grant", "reval-mid", nats.Header{dlq.HeaderPrincipal: {"user:7"}}, `{"grant":"admin"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	reval := &revalStub{}
	reval.allow.Store(true)
	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond}, reval)
	w.AfterJudge(func() { reval.allow.Store(false) }) // the owning service revokes the principal's grant
	n, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	j := b.job(t, req.ID, id)
	assert.Zero(t, b.publishedAs(t, "reval-mid"), "published after the owning service denied it (job %s: %s)", j.State, j.Result)
	assert.Equal(t, "blocked", j.State)
	assert.Contains(t, j.Result, "revalidation denied: the principal's grant was revoked")
}

// TestApproverAgedOutMidClaimPublishesNothing: a worker
// claims and judges an approved request while its approver's directory
// entry is younger than the authority's MaxAge (their groups count); before
// it publishes, the entry ages past MaxAge (time passes; nothing in the
// database changes), so the approver no longer holds the right to approve
// (authz.Authority: an entry older than MaxAge keeps no groups). The
// worker knows when the yes it was judged on lapses and publishes nothing
// after it: the job goes back to the next claim, which blocks it. Before,
// the gate's stamp (which leaves seen_at out) did not move, and the job
// was published by an approver who no longer held the right.
func TestApproverAgedOutMidClaimPublishesNothing(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "aged-out-1"
	id := b.seedItem(t, "email.send", msgID, nats.Header{dlq.HeaderOperationID: {"op-" + msgID}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)

	// The authority's clock: the real one, moved on by shift.
	var shift atomic.Int64
	auth := b.auth
	auth.MaxAge = time.Hour
	auth.Now = func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	w := replay.NewWorker(b.replays, b.js, auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute,
		Retry: time.Millisecond}, b.log)
	w.AfterJudge(func() { shift.Store(int64(2 * time.Hour)) }) // the approver's entry is now older than MaxAge
	n, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	published := b.publishedAs(t, msgID)
	j := b.job(t, req.ID, id)
	assert.Zero(t, published, "published after the approver's right had lapsed (job %s: %s)", j.State, j.Result)
	may, err := auth.StillAllowed(ctx, approver1, "acme", replaypolicy.Object(replaypolicy.SameOperation), "approve")
	require.NoError(t, err)
	assert.False(t, may, "at the publish, the authority says the approver no longer may approve")

	assert.Equal(t, "pending", j.State, "released to the next claim: %s", j.Result)

	// What the rule says of the same job once a claim asks again.
	w.AfterJudge(nil)
	j = b.rerun(t, w, req.ID, id)
	assert.Equal(t, "blocked", j.State, j.Result)
	assert.Zero(t, b.publishedAs(t, msgID))
}

// TestFullTargetStreamHoldsItemsVisibly: a target stream that is full and
// discards new messages refuses the replay (503: maximum messages
// exceeded). Nothing was stored, so the item stays pending and is tried
// again, and the request's progress says so, with the broker's answer,
// rather than only "to go". Once someone makes room the item is replayed.
func TestFullTargetStreamHoldsItemsVisibly(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	full := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, MaxMsgs: 1, Discard: jetstream.DiscardNew,
		Duplicates: 200 * time.Millisecond})
	_, err := b.js.Publish(ctx, "events.filler", []byte("fills the stream"))
	require.NoError(t, err)
	id := b.seedItem(t, "search.index_update", "full-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})

	var j jobRow
	wait.Until(t, "the broker to refuse the publish", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		j = b.job(t, req.ID, id)
		return strings.HasPrefix(j.Result, replaypolicy.NotSentLead)
	})
	assert.Equal(t, "pending", j.State)
	assert.Contains(t, j.Result, "maximum messages exceeded")
	p, err := b.replays.Progress(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, p.Pending)
	assert.Equal(t, 1, p.NotStored)
	assert.Equal(t, j.Result, p.NotStoredWhy)
	assert.Zero(t, copiesOf(t, full, "full-1"))

	cfg := full.CachedInfo().Config
	cfg.MaxMsgs = 10 // someone makes room
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	wait.Until(t, "the item to be replayed", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, req.ID, id).State == "replayed"
	})
	p, err = b.replays.Progress(ctx, req.ID)
	require.NoError(t, err)
	assert.Zero(t, p.NotStored)
	assert.Equal(t, 1, copiesOf(t, full, "full-1"))
}
