package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevReplay12UnknownReleasedShownToGo: an item whose PubAck was lost is
// "unknown" (the pages: "retrying (no PubAck)", amber). The claim that
// retries it is released before it publishes (here the worker stops, as
// at every deploy; the same for a lease running short, a rights or policy
// stamp that moved, a status that could not be read). The release records
// the job "pending" with its first_attempt_at kept: the pages now count
// and show it "to go" (blue), as if nothing of it had ever been sent,
// though its first publish may have landed (here it did). Invariant 13:
// unknown is shown as itself.
func TestRevReplay12UnknownReleasedShownToGo(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "doc-unknown-released", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})

	w := b.worker(t, replay.WorkerConfig{Owner: "loses-ack", Retry: 50 * time.Millisecond})
	w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		return nil, context.DeadlineExceeded // the broker stored it; the ack never came
	})
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"unknown": 1}, b.jobStates(t, req.ID))
	require.Equal(t, 1, b.onSubject(t, "app.acme.search.index_update"), "the first publish landed")
	p, err := b.replays.Progress(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, 1, p.Unknown)

	// The retry's claim: the worker stops after judging it, before it
	// publishes.
	stopping := b.worker(t, replay.WorkerConfig{Owner: "stopping", Retry: 50 * time.Millisecond})
	var stop context.CancelFunc
	stopping.AfterJudge(func() { stop() })
	wait.Until(t, "the retry to be claimed", time.Minute, func() bool {
		rctx, cancel := context.WithCancel(ctx)
		stop = cancel
		n, _ := stopping.RunOnce(rctx)
		cancel()
		return n == 1
	})
	require.Equal(t, 1, b.onSubject(t, "app.acme.search.index_update"), "the stopping worker published nothing")
	var first *time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT first_attempt_at FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&first))
	require.NotNil(t, first, "its first publish may have landed (it did)")

	p, err = b.replays.Progress(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"unknown": 1}, b.jobStates(t, req.ID),
		"an item whose publish may have landed is still unknown after a claim released it unsent: %s", b.jobsText(t, req.ID))
	assert.Equal(t, 1, p.Unknown, "the request page counts it unknown (retrying), not to go: %+v", p)
}

// TestRevReplay12UnknownNotSentSaysNothingStored: the retry of an item
// whose PubAck was lost finds the NATS connection down (as during the
// outage that lost the ack). It is recorded "pending" with the result
// "not published (…): nothing was stored; it is tried again later", and
// the request page counts it among the items the broker "did not take or
// store" (Progress.NotStored): its first publish may have landed (here it
// did). A retry's "not sent" says nothing about the first publish, and the
// item's outcome is still unknown.
func TestRevReplay12UnknownNotSentSaysNothingStored(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "doc-unknown-notsent", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})

	w := b.worker(t, replay.WorkerConfig{Owner: "loses-ack", Retry: 50 * time.Millisecond})
	w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		return nil, context.DeadlineExceeded // the broker stored it; the ack never came
	})
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"unknown": 1}, b.jobStates(t, req.ID))
	require.Equal(t, 1, b.onSubject(t, "app.acme.search.index_update"), "the first publish landed")

	// The retry's worker publishes on a connection that is down.
	nc, js := b.ns.Connect(t)
	nc.Close()
	down := b.workerOn(t, js, replay.WorkerConfig{Owner: "nats-down", Retry: 50 * time.Millisecond})
	wait.Until(t, "the retry to be claimed", time.Minute, func() bool {
		n, err := down.RunOnce(ctx)
		require.NoError(t, err)
		return n == 1
	})
	p, err := b.replays.Progress(ctx, req.ID)
	require.NoError(t, err)
	text := b.jobsText(t, req.ID)
	assert.NotContains(t, text, "nothing was stored", "the first publish of it landed")
	assert.Equal(t, 0, p.NotStored, "counted among the items the broker did not store: %+v (%s)", p, text)
	assert.Equal(t, 1, p.Unknown, "its outcome is still unknown: %+v", p)
}
