package replay_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevReplay12CancelDuringPublishLeavesDeferredHeld: a cancel that
// lands while a worker waits for the PubAck of a first attempt (the job
// is claimed under a live lease, so halt leaves it to the worker). The
// broker answers Duplicate of a message that is not ours (the producer
// sent the original again): nothing of the replay was stored. The worker
// records the job "deferred" (until that message's window has passed)
// under a request that is cancelled: the cancelled request keeps its dead
// letter (replay_requested, held) and shows an item deferred for a whole
// duplicate window (2 min here; as long as the target's window, hours on
// some streams). Nothing the request page offers frees it meanwhile
// (HeldFreedBy for a cancelled request: "wait for request N to finish, or
// have it ended on its page"): a new selection of it leaves it out.
// Nothing landed: the job is cancelled, and its dead letter goes
// back to quarantine, as halt does for a job no worker holds.
func TestRevReplay12CancelDuringPublishLeavesDeferredHeld(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	id := b.seedItem(t, "search.index_update", "doc-cancel-deferred", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	// The producer sends the original again under its message id: the
	// target's window holds a message that is not the replay's.
	again := nats.NewMsg(subject)
	again.Header.Set(jetstream.MsgIDHeader, "doc-cancel-deferred")
	_, err := b.js.PublishMsg(ctx, again)
	require.NoError(t, err)

	w := b.worker(t, replay.WorkerConfig{})
	cancelled := false
	w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		if !cancelled {
			cancelled = true
			require.NoError(t, b.replays.Cancel(ctx, req.ID, oncall, "wrong selection", quarantine.RequestMeta{}))
		}
		return a, err
	})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.True(t, cancelled, "the cancel landed while the PubAck was read")
	require.Equal(t, 1, b.onSubject(t, subject), "the broker dropped the replay: nothing of it landed")

	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusCancelled, r.Status)
	assert.Equal(t, map[string]int{"cancelled": 1}, b.jobStates(t, req.ID),
		"a cancelled request whose job nothing landed of ends it cancelled, not waiting out a duplicate window: %s", b.jobsText(t, req.ID))
	d, err := b.store.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusQuarantined, d.Status, "the cancelled request lets go of its dead letter")

	// Requested again meanwhile, the item is left out: the cancelled
	// request still holds it.
	_, reqs := b.draft(t, oncall, id)
	assert.Empty(t, skipReasonsOf(t, b.replays, reqs)[id], "a new selection of the dead letter of a cancelled request")
}
