package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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

// TestClaimUsesStoredSizes: the approval stores each job's size (its
// payload and its headers as text, what publishing reads), and a claim
// sizes its jobs by that alone: its plan reads no item and no dead letter
// (no size probe), and a job whose stored size says it fits is claimed
// whatever its headers weigh.
func TestClaimUsesStoredSizes(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	big := strings.Repeat("h", 10<<10)
	var ids []int64
	for i := range 3 {
		ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprintf("sized-%d", i), nats.Header{"X-Big": {big}}, strings.Repeat("p", 100*(i+1))))
	}
	req := b.request(t, ids, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	var jobs, matching int
	var least int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE j.bytes = octet_length(d.payload) + octet_length(i.headers::text)), min(j.bytes)
        FROM replay_jobs j JOIN replay_items i ON i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id
        JOIN dead_letters d ON d.id = j.dead_letter_id AND d.dead_lettered_at = j.dead_lettered_at
        WHERE j.request_id = $1`, req.ID).Scan(&jobs, &matching, &least))
	require.Equal(t, 3, jobs)
	assert.Equal(t, jobs, matching, "each job stores its payload's and headers' bytes")
	assert.Greater(t, least, int64(10<<10), "the headers count")

	t.Run("NoSizeProbe", func(t *testing.T) {
		lease := 30 * time.Second
		args := []any{2048, "plan", lease.String(), int64(16 << 20), (lease * 2 / 3).Seconds()}
		for _, mode := range []string{"values", "generic"} {
			plan := explain(t, b, replay.ClaimTx, mode, "claim", replay.ClaimJobs, "bigint, text, interval, bigint, float8", args...)
			assert.NotContains(t, plan, "replay_items", plan)
			assert.NotContains(t, plan, "dead_letters", plan)
		}
	})

	t.Run("StoredSizeDecides", func(t *testing.T) {
		// Sizes as the approval stored them: 12 KiB each, so 25 KiB would
		// take two. Stored as 1 KiB, the claim takes all three.
		_, err := b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now(), bytes = 1024 WHERE request_id = $1`, req.ID)
		require.NoError(t, err)
		w := replay.NewWorker(b.replays, b.js, b.auth, nil, replay.WorkerConfig{BatchBytes: 25 << 10}, b.log)
		claimed, err := w.Claim(ctx)
		require.NoError(t, err)
		assert.Len(t, claimed, 3, "the stored sizes, 3 KiB in all, fit in 25 KiB")
	})
}
