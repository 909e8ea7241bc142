package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev41PanicBeforeTheSendUndoesTheReservation: a worker that panics
// on a job its gate marked and reserved, before handing it to NATS, left
// the reservation of its first publish (first_published_at) in place,
// though it undid the attempt's marks: a message planted since under the
// job's headers would be taken for that publish. The failure's count now
// undoes all three, as the record does for a job released unsent.
func TestRev41PanicBeforeTheSendUndoesTheReservation(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dl := b.seedItem(t, "search.index_update", "rev41-panic", nil, "{}")
	req := b.request(t, []int64{dl}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	w := b.worker(t, replay.WorkerConfig{AckTimeout: time.Minute, Lease: time.Hour})
	w.BeforeSend(func(int64, time.Time) { panic("a bug met on this item's data") })
	_, err := w.RunOnceGuarded(ctx)
	require.ErrorContains(t, err, "replay worker panicked")
	require.Equal(t, 1, b.failures(t, dl))

	var attempted, handed, reserved bool
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT first_attempt_at IS NOT NULL, handed_at IS NOT NULL, first_published_at IS NOT NULL
        FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&attempted, &handed, &reserved))
	assert.False(t, attempted, "nothing of it was sent")
	assert.False(t, handed, "no one's replay")
	assert.False(t, reserved, "a reservation never handed to NATS is no first publish")
	assert.Equal(t, 0, b.onSubject(t, "app.acme.search.index_update"))
}
