package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
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

// TestWorkerStopDuringSendRevalidationReleases (review revreplay2): a
// worker stopping (deploy, SIGTERM) while it asks the owning service right
// before the send must release the job to the next claim, as every other
// stop does ("released: the worker is stopping"). It blocks it for good
// instead: "revalidation got no answer: context canceled".
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

// TestRightsLapseBoundaryIsNotALivelock (review revreplay2): the judge
// (StillAllowedUntil) counts an entry exactly MaxAge old as fresh (its
// groups count; lapse = now) while the send loop (rightsLapsed) counts the
// same instant as lapsed. With the authority's clock at that instant
// every claim judges yes and releases the job: it is neither published
// nor blocked, claim after claim.
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
