package replay_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// panicOnJobAudit is a bug met on one job's data in the code that writes
// its audit rows: any audit append (audit.AppendBatch's first statement)
// whose rows name job (their after's "job") panics, as a bug in building
// or sealing that item's rows would.
type panicOnJobAudit struct{ job atomic.Int64 }

func (p *panicOnJobAudit) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	job := p.job.Load()
	if job == 0 || !strings.Contains(data.SQL, "current_setting('transaction_isolation')") || len(data.Args) == 0 {
		return ctx
	}
	if afters, ok := data.Args[1].([]*string); ok {
		for _, a := range afters {
			if a != nil && (strings.Contains(*a, fmt.Sprintf(`"job":%d,`, job)) || strings.Contains(*a, fmt.Sprintf(`"job":%d}`, job))) {
				panic(fmt.Sprintf("a bug met on the audit rows of job %d", job))
			}
		}
	}
	return ctx
}

func (p *panicOnJobAudit) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestRevFixes7aPanicWhileCountingAFailureEndsTheProcess
//
// Defect (medium): runOnceGuarded counts a recovered panic against the job
// (failedOn) from inside its deferred recover, with no recover of its own
// around it. failedOn writes the failure's audit row for the job (and at
// the third failure records the job's end and finishes its request):
// the same kind of work, on the same job's data, as the recording a
// poison job may have panicked in. A panic there is not recovered: it
// leaves runOnceGuarded, then Worker.Run, whose goroutine (app/replay.go:
// wg.Go(func() { w.Run(ctx) })) has no recover: the whole console process
// ends (pages, ingest, every other request's replay). The failure's
// transaction rolls back, so nothing is counted: each restart claims the
// job again after its lease and ends the process again, for ever. Before
// the fix, a panic on a job's data was always recovered. Here the bug is
// met in the audit append of the job's rows (a tracer panicking on them):
// the first panic (recording the job's outcome) is recovered; the one met
// while counting it escapes.
//
// Expected: a panic met while counting a failure is recovered as well
// (failedOn in a recover of its own: countError set, the job left to its
// lease), RunOnceGuarded returns an error and the worker goes on.
func TestRevFixes7aPanicWhileCountingAFailureEndsTheProcess(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dl := b.seedItem(t, "search.index_update", "rev-fixes7a-audit-bug", nil, "{}")
	req := b.request(t, []int64{dl}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	var job int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT id FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&job))

	cfg, err := pgxpool.ParseConfig(b.db.Pool.Config().ConnString())
	require.NoError(t, err)
	tracer := &panicOnJobAudit{}
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	svc := replay.New(pool, b.config(t))
	w := replay.NewWorker(svc, b.js, b.auth, nil, replay.WorkerConfig{Owner: "rev-fixes7a", Poll: 20 * time.Millisecond, AckTimeout: time.Minute, Lease: time.Hour}, b.log)
	tracer.job.Store(job)

	var escaped any
	func() {
		defer func() { escaped = recover() }()
		_, err = w.RunOnceGuarded(ctx)
	}()
	assert.Nil(t, escaped, "a panic met while the failure was counted left the worker (its goroutine has no recover: the process ends)")
	if escaped == nil {
		assert.ErrorContains(t, err, "replay worker panicked")
	}
}
