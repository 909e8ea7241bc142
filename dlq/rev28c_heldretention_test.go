package dlq_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevLeft28CancelledRequestsHeldItemsAreKeptFromRetention: dead
// letters past every retention period are in approved replay requests
// whose jobs a worker claimed: one worker is publishing under a live
// lease, another died after it sent (its lease ran out, its first attempt
// may have landed). Both requests are cancelled: closed, but their items
// still hold the dead letters (the live worker records its own, the dead
// one's needs a person). A keeper pass keeps both: a dead letter whose
// publish may be landing or may have landed is not removed under the
// worker or the person who must settle it. Once the live worker's job
// ends and its item is let go, the next pass removes that one.
func TestRevLeft28CancelledRequestsHeldItemsAreKeptFromRetention(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}
	old := r.daysAgo(120)
	publishing := r.letters(t, 1, "acme", "search.index_update", old, dlq.StatusQuarantined)
	crashed := r.letters(t, 1, "acme", "search.index_update", old, dlq.StatusQuarantined)

	live := testfactory.Request(t, r.replays, oncall, publishing, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, live.Status)
	_, err := r.db.Pool.Exec(ctx, `UPDATE replay_jobs SET state = 'claimed', fence = fence + 1, lease_owner = 'worker-a',
        lease_until = now() + interval '1 hour', first_attempt_at = now() WHERE request_id = $1`, live.ID)
	require.NoError(t, err)
	dead := testfactory.Request(t, r.replays, oncall, crashed, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, dead.Status)
	_, err = r.db.Pool.Exec(ctx, `UPDATE replay_jobs SET state = 'claimed', fence = fence + 1, lease_owner = 'died',
        lease_until = now() - interval '1 second', first_attempt_at = now() - interval '1 second' WHERE request_id = $1`, dead.ID)
	require.NoError(t, err)
	for _, id := range []int64{live.ID, dead.ID} {
		require.NoError(t, r.replays.Cancel(ctx, id, oncall, "wrong target", quarantine.RequestMeta{}))
		var status string
		require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT status FROM replay_requests WHERE id = $1`, id).Scan(&status))
		require.Equal(t, string(replay.StatusCancelled), status, "the request is closed")
	}
	heldBy := func(id int64) bool {
		var held bool
		require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT held FROM replay_items WHERE request_id = $1`, id).Scan(&held))
		return held
	}
	require.True(t, heldBy(live.ID), "the live worker's item is still held")
	require.True(t, heldBy(dead.ID), "the dead worker's item is still held")

	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	r.pass(t)
	both := append(append([]int64{}, publishing...), crashed...)
	assert.Equal(t, both, r.remaining(t, both),
		"a dead letter a closed request's item still holds (a publish under way, or one that may have landed) is kept")

	// The live worker records its job and its dead letter as replayed and
	// lets its item go, as the worker does (record.go); the next pass may
	// remove it.
	_, err = r.db.Pool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed', lease_owner = '', lease_until = NULL WHERE request_id = $1`, live.ID)
	require.NoError(t, err)
	_, err = r.db.Pool.Exec(ctx, `UPDATE replay_items SET held = false WHERE request_id = $1`, live.ID)
	require.NoError(t, err)
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusReplayed, publishing...)
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	r.pass(t)
	assert.Equal(t, crashed, r.remaining(t, both), "let go, it is removed; the unsettled one is still kept")
}
