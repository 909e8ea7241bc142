package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestReplayedRowSaysWhenItWasFirstAttempted: the replayed row of a job
// published once names its first attempt and first publish as the gate
// set them in replay_jobs (the database's clock), not the time of the
// record.
func TestReplayedRowSaysWhenItWasFirstAttempted(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "first-attempt-1", nil, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitFinished(t, req.ID)

	var attempted, published time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT first_attempt_at, first_published_at FROM replay_jobs WHERE request_id = $1`, req.ID).
		Scan(&attempted, &published))
	var raw []byte
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT after FROM audit_log
        WHERE action = 'replay.item.replayed' AND object_type = 'dead_letter' AND object_id = $1`, fmt.Sprint(id)).Scan(&raw))
	var after map[string]any
	require.NoError(t, json.Unmarshal(raw, &after))
	assert.Equal(t, attempted.UTC().Format(time.RFC3339Nano), after["first_attempt_at"])
	assert.Equal(t, published.UTC().Format(time.RFC3339Nano), after["first_published_at"])
}
