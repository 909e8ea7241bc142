package replay_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestWorkerPlansOnFreshJobs checks how PostgreSQL plans the claim and the
// publish gate on a request of 20,000 jobs, right after its submit (the
// jobs' statistics from before it, as they are until autovacuum reads the
// new rows) and after they were analysed: the claim reads
// replay_jobs_ready_idx in its order, and the gate reaches each of its
// jobs by the primary key instead of joining them with every claimed job.
// (With a few thousand jobs, reading them all costs less than the probes,
// and PostgreSQL rightly prefers it.)
func TestWorkerPlansOnFreshJobs(t *testing.T) {
	t.Parallel()
	rb, _, _, _ := benchReplayRequest(t, 20_000)
	ctx := context.Background()
	lease := 30 * time.Second
	w := replay.NewWorker(rb.replays, rb.js, nil, nil, replay.WorkerConfig{Owner: "plan", Lease: lease},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	claimReadsReadyIndexInOrder := func(t *testing.T) {
		args := []any{2048, "plan", lease.String(), int64(16 << 20), (lease * 2 / 3).Seconds()}
		for _, mode := range []string{"values", "generic"} {
			plan := explain(t, rb, replay.ClaimTx, mode, "claim", replay.ClaimJobs, "bigint, text, interval, bigint, float8", args...)
			require.Contains(t, plan, "Index Scan using replay_jobs_ready_idx on replay_jobs", plan)
			require.NotContains(t, plan, "Bitmap", plan)
		}
	}
	var jobs []*replay.Job
	gateProbesJobsByKey := func(t *testing.T) {
		ids, fences := make([]int64, 2000), make([]int64, 2000)
		for i := range ids {
			ids[i], fences[i] = jobs[i].ID(), jobs[i].Fence()
		}
		plan := explain(t, rb, replay.GateTx, "prepared", "gate", replay.GateJobs, "bigint, integer, timestamptz, bigint[], bigint[], text, text[], timestamptz[], interval[], bigint[]",
			jobs[0].RequestID(), len(ids), time.Now().Add(lease), ids, fences, "1/stamp", make([]string, len(ids)), make([]time.Time, len(ids)), make([]time.Duration, len(ids)), make([]int64, len(ids)))
		require.Contains(t, plan, "Index Scan using replay_jobs_pkey on replay_jobs j", plan)
		require.NotContains(t, plan, "Hash Join", plan)
		require.NotContains(t, plan, "Materialize", plan)
	}

	t.Run("ClaimReadsReadyIndexInOrder", claimReadsReadyIndexInOrder)
	var err error
	jobs, err = w.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 2048)
	t.Run("GateProbesJobsByKey", gateProbesJobsByKey)
	_, err = rb.db.OwnerPool.Exec(ctx, "ANALYZE replay_jobs, replay_items")
	require.NoError(t, err)
	t.Run("ClaimReadsReadyIndexInOrderAnalyzed", claimReadsReadyIndexInOrder)
	t.Run("GateProbesJobsByKeyAnalyzed", gateProbesJobsByKey)
}

// explain returns the plan of sql with args in a transaction begun as opts
// begins it: by mode, the plan made for these values ("values"), the plan
// the transaction gives the statement prepared with types, as the worker's
// statements are ("prepared": PostgreSQL's choice, or the generic plan
// under plan_cache_mode = force_generic_plan), or its generic plan, made
// once for any values ("generic").
func explain(t *testing.T, rb *replayBundle, opts pgx.TxOptions, mode, name, sql, types string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	require.NoError(t, pgx.BeginTxFunc(ctx, rb.db.Pool, opts, func(tx pgx.Tx) error {
		q := "EXPLAIN " + sql
		if mode != "values" {
			if _, err := tx.Exec(ctx, "PREPARE "+name+" ("+types+") AS "+sql); err != nil {
				return err
			}
			if mode == "generic" {
				if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
					return err
				}
			}
			ps := make([]string, len(args))
			for i := range args {
				ps[i] = fmt.Sprintf("$%d", i+1)
			}
			q = "EXPLAIN EXECUTE " + name + "(" + strings.Join(ps, ", ") + ")"
		}
		// EXPLAIN is not analysed when it is parsed, so its parameters
		// have no types: the values go in the statement's text.
		rows, err := tx.Query(ctx, q, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
		if err != nil {
			return err
		}
		lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "DEALLOCATE ALL")
		return err
	}))
	return strings.Join(lines, "\n")
}
