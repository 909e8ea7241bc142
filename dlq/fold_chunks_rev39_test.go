package dlq

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev39FoldBacklogGoesInChunks: a backlog of deltas (a flood of dead
// letters whose errors all differ, the folder stopped for a while) is
// folded in chunks of foldChunk, each its own statement, not in one
// statement that grows with the backlog: that one outlasted the workers'
// statement timeout, rolled back every turn, for good, and every count,
// group and snooze stood still. One turn folds the whole backlog, the
// counts come out as one fold would have made them, and the fold's time
// is exported.
func TestRev39FoldBacklogGoesInChunks(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	backlog := 2*foldChunk + 123
	_, err := l.db.Pool.Exec(ctx, `INSERT INTO dead_letter_deltas (tenant, item_type, error_class, status, fingerprint, minute, n,
        first_seen, last_seen, sample_id, sample_at)
    SELECT 'acme', 'orders.refund', 'permanent', 'quarantined', md5(g::text),
           date_bin('1 minute', now() - g * interval '1 second', TIMESTAMPTZ '2000-01-01 00:00:00+00'), 1,
           now() - g * interval '1 second', now() - g * interval '1 second', g, now() - g * interval '1 second'
    FROM generate_series(1, $1) g`, backlog)
	require.NoError(t, err)

	n, xid, err := foldCounters(ctx, l.db.Pool, false, foldChunk)
	require.NoError(t, err)
	assert.NotZero(t, xid)
	assert.EqualValues(t, foldChunk, n, "one fold takes one chunk")
	var left int
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letter_deltas`).Scan(&left))
	assert.Equal(t, backlog-foldChunk, left)

	folded := prometheus.NewGauge(prometheus.GaugeOpts{Name: "folded"})
	var last int64
	chunk := foldChunk
	require.NoError(t, foldTurn(ctx, l.db.Pool, &last, &chunk, folded))
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letter_deltas`).Scan(&left))
	assert.Zero(t, left, "one turn folds the rest, chunk after chunk")
	assert.Positive(t, testutil.ToFloat64(folded), "the turn's time is exported")
	assert.Greater(t, last, xid)

	var counted, groups, arrived int64
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT n FROM dead_letter_counts
        WHERE (tenant, item_type, error_class, status) = ('acme', 'orders.refund', 'permanent', 'quarantined')`).Scan(&counted))
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*), sum(arrived) FROM dead_letter_groups WHERE tenant = 'acme'`).Scan(&groups, &arrived))
	assert.EqualValues(t, backlog, counted)
	assert.EqualValues(t, backlog, groups)
	assert.EqualValues(t, backlog, arrived)
}

// TestRev39FoldChunkHalvesAfterATimeout: a chunk that outlasts the
// statement timeout halves the chunks of the next turn (a fixed chunk over
// a short DATABASE_WORKER_STATEMENT_TIMEOUT rolled back every turn, for
// good), and a turn that folds everything doubles them back.
func TestRev39FoldChunkHalvesAfterATimeout(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	_, err := l.db.Pool.Exec(ctx, `INSERT INTO dead_letter_deltas (tenant, item_type, error_class, status, fingerprint, minute, n,
        first_seen, last_seen, sample_id, sample_at)
    SELECT 'acme', 'orders.refund', 'permanent', 'quarantined', md5(g::text), date_bin('1 minute', now(), TIMESTAMPTZ '2000-01-01 00:00:00+00'), 1,
           now(), now(), g, now()
    FROM generate_series(1, 3000) g`)
	require.NoError(t, err)
	// The counters held by another transaction: the fold waits for them
	// until its statement timeout ends it.
	cfg := l.db.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "200"
	short, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer short.Close()
	hold, err := l.db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = hold.Exec(ctx, `LOCK TABLE dead_letter_counts IN EXCLUSIVE MODE`)
	require.NoError(t, err)
	var last int64
	chunk := 4000
	err = foldTurn(ctx, short, &last, &chunk, nil)
	require.Error(t, err)
	require.True(t, timedOut(ctx, err), "a statement timeout: %v", err)
	assert.Equal(t, 2000, chunk, "halved for the next turn")
	require.NoError(t, hold.Rollback(ctx))

	chunk = minFoldChunk
	require.NoError(t, foldTurn(ctx, short, &last, &chunk, nil))
	assert.Equal(t, 2*minFoldChunk, chunk, "a turn that folded everything doubles it back")
	var left int
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letter_deltas`).Scan(&left))
	assert.Zero(t, left)
}
