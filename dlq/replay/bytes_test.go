package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestClaimAndSelectionCountHeaders: dead letters of two payload bytes
// under 10 KiB of headers. A worker's claim stops at BatchBytes of payload
// and headers (two of them in 25 KiB, not all five), and a selection whose
// headers come to more than its bound is refused, nothing written.
func TestClaimAndSelectionCountHeaders(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	big := strings.Repeat("h", 10<<10)
	var ids []int64
	for i := range 5 {
		ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprintf("big-%d", i), nats.Header{"X-Big": {big}}, "{}"))
	}

	capped := replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: testSubjects(t), SelectionHeaderBytes: 25 << 10})
	_, err := capped.CreateDrafts(ctx, oncall, ids, []string{"acme"}, false, allowAll, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
	assert.Contains(t, quarantine.ErrorMessage(err), "the selection's headers come to more than 25 KiB")
	var requests int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_requests`).Scan(&requests))
	assert.Zero(t, requests, "nothing written")

	b.request(t, ids, replay.SubmitInput{})
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now()`)
	require.NoError(t, err)
	w := replay.NewWorker(b.replays, b.js, b.auth, nil, replay.WorkerConfig{BatchBytes: 25 << 10}, b.log)
	jobs, err := w.Claim(ctx)
	require.NoError(t, err)
	assert.Len(t, jobs, 2, "25 KiB of payload and headers: two jobs of 10 KiB headers")
}
