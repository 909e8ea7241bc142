package replay_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// factRows is a pgx tracer that records how many rows each read of an
// item's facts (the statements that read replay_items beside their dead
// letters) returned.
type factRows struct {
	mu   sync.Mutex
	sql  map[*pgx.Conn]string
	rows []int64
}

func (f *factRows) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sql[conn] = data.SQL
	return ctx
}

func (f *factRows) TraceQueryEnd(_ context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if data.Err == nil && strings.Contains(f.sql[conn], "FROM replay_items i LEFT JOIN dead_letters d") {
		f.rows = append(f.rows, data.CommandTag.RowsAffected())
	}
}

func (f *factRows) take() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.rows
	f.rows = nil
	return out
}

// TestReconcileReadsOnlyTheSettledItem: settling one item of a request
// whose items all wait for a person reads the facts of that item alone
// (one row), not of every item of the request, which made settling a large
// request one item at a time quadratic; the item is settled as before: in
// the ledger under its class's identity (dedupe), the others still waiting.
func TestReconcileReadsOnlyTheSettledItem(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	var ids []int64
	for i := range 4 {
		ids = append(ids, b.seedItem(t, "analytics.event", fmt.Sprintf("one-item-%d", i), nil, "{}"))
	}
	req := approved(t, b, b.request(t, ids, replay.SubmitInput{}))
	require.Equal(t, replaypolicy.Dedupe, req.Class)
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1<<30)
	wait.For(t, "every item to wait for a person", time.Minute, func() error {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		for _, id := range ids {
			j := b.job(t, req.ID, id)
			require.NotEqual(t, "replayed", j.State, j.Result)
			if j.State != "needs_reconciliation" {
				return fmt.Errorf("dead letter %d is %s (%s)", id, j.State, j.Result)
			}
		}
		return nil
	})

	trace := &factRows{sql: map[*pgx.Conn]string{}}
	cfg, err := pgxpool.ParseConfig(b.db.Pool.Config().ConnString())
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = trace
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	svc := replay.New(pool, b.config(t))
	settled := int32(0)
	require.NoError(t, svc.Reconcile(ctx, req.ID, ids[2], approver1,
		replay.ReconcileInput{Choice: replaypolicy.Applied, Note: "the event is in the warehouse", Settled: &settled}, quarantine.RequestMeta{}))

	read := trace.take()
	require.NotEmpty(t, read, "settling reads the item's facts")
	for _, n := range read {
		assert.EqualValues(t, 1, n, "a read of the facts for one item returned %d rows: %v", n, read)
	}
	assert.Equal(t, map[int64][2]bool{ids[2]: {true, false}}, ledgerRows(t, b, req.ID), "the item is in the ledger under its message id")
	assert.Equal(t, "replayed", b.job(t, req.ID, ids[2]).State)
	for _, id := range []int64{ids[0], ids[1], ids[3]} {
		assert.Equal(t, "needs_reconciliation", b.job(t, req.ID, id).State)
	}
}
