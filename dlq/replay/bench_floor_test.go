package replay_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
)

// The floor's statements: only the rows the replay rules make a worker
// write for each item, set-based over a batch, with none of the reads,
// guards that read other rows, or locks the worker takes besides.
const (
	// Before publishing: one write of the job (the claim's lease and
	// fencing token, and the gate's mark that a publish may land from now
	// on, in one UPDATE), committed before anything is sent.
	floorAttempt = `UPDATE replay_jobs j SET state = 'claimed', lease_owner = $2, lease_until = now() + interval '30 seconds',
    fence = nextval('replay_fence_seq'), attempts = j.attempts + 1, updated_at = now(),
    first_attempt_at = coalesce(j.first_attempt_at, now()), first_published_at = coalesce(j.first_published_at, now()),
    handed_at = coalesce(j.handed_at, now())
FROM unnest($1::bigint[]) AS u(id) WHERE j.id = u.id
RETURNING j.id, j.fence`
	// After the PubAcks, in one transaction: the outcome under the fence,
	floorOutcome = `UPDATE replay_jobs j SET state = 'replayed', result = '', pub_stream = 'APP', pub_seq = u.seq,
    lease_owner = '', lease_until = NULL, updated_at = now()
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS u(id, fence, seq)
WHERE j.id = u.id AND j.fence = u.fence AND j.state = 'claimed'`
	// the ledger row (the record's INSERT),
	floorLedger = `INSERT INTO replay_ledger (job_id, request_id, dead_letter_id, tenant, class, msg_id,
    operation_id, subject, stream, seq, duplicate, dedupe_key, operation_key)
SELECT u.id, $2, u.dl, 'acme', 'rebuildable', u.msg_id, '', u.subject, 'APP', u.seq, false, false, false
FROM unnest($1::bigint[], $3::bigint[], $4::text[], $5::text[], $6::bigint[]) AS u(id, dl, msg_id, subject, seq)
ON CONFLICT DO NOTHING`
	// the hold's release,
	floorRelease = `UPDATE replay_items SET held = false WHERE request_id = $1 AND dead_letter_id = ANY($2) AND held`
)

// the dead letters' status, with the counters (dlq.StatusMove, as every
// status change), and then the audit rows (audit.AppendBatch).
var floorStatus = dlq.StatusMove(`
    SELECT d.id, d.dead_lettered_at, d.status
    FROM unnest($1::bigint[], $2::timestamptz[]) AS k(id, at)
    JOIN dead_letters d ON d.id = k.id AND d.dead_lettered_at = k.at
    FOR UPDATE OF d`, `'replayed'`, "id")

// What the worker's outcome rows say of what was published (publishedAfter),
// as the floor writes it: a payload's hash and the attempt's time.
const (
	floorPayloadSHA256 = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" // SHA-256 of "{}"
	floorAttemptAt     = "2026-01-02T03:04:05.123456Z"
)

// floorJob is what the floor's statements need of a job.
type floorJob struct {
	id, deadLetterID, fence, seq int64
	at                           time.Time
	msgID, subject               string
}

// BenchmarkReplayFloor measures what PostgreSQL can do here with the rows
// BenchmarkReplay100k's request makes the workers write: the same 100,000
// submitted jobs of 1 KB dead letters, and for each batch of 2,048 (as a
// claim) only the durable per-item writes the replay rules cannot do
// without, set-based: before publishing, one UPDATE of the jobs (claim and
// attempt mark together), committed; after, in one transaction, the jobs'
// outcome, the ledger rows, the dead letters' status (with the counters),
// the holds' release and the audit rows. Nothing is read, locked or
// published besides. BENCH_REPLAY_WORKERS connections (default 2, the
// replay benchmark's workers) take batches in turn. It reports the rate
// (floor-msgs/s), the same bare publish as BenchmarkReplay100k and their
// ratio (the best ratio the replay could reach on this machine if its
// publishing cost nothing and overlapped the database perfectly), and
// each statement's database time per item (µs, summed over connections).
func BenchmarkReplayFloor(b *testing.B) {
	total := benchSetting("BENCH_REPLAY_TOTAL", 100_000)
	workers := benchSetting("BENCH_REPLAY_WORKERS", 2)
	batchSize := benchBatch()
	for b.Loop() {
		rb, req, _, payload := benchReplayRequest(b, total)
		ctx := context.Background()
		rows, err := rb.db.Pool.Query(ctx, `SELECT j.id, j.dead_letter_id, j.dead_lettered_at, i.msg_id, i.subject
            FROM replay_jobs j JOIN replay_items i ON i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id
            WHERE j.request_id = $1 ORDER BY j.not_before, j.id`, req)
		require.NoError(b, err)
		var jobs []floorJob
		var j floorJob
		_, err = pgx.ForEachRow(rows, []any{&j.id, &j.deadLetterID, &j.at, &j.msgID, &j.subject}, func() error {
			j.seq = int64(len(jobs) + 1)
			jobs = append(jobs, j)
			return nil
		})
		require.NoError(b, err)
		require.Len(b, jobs, total)
		var batches [][]floorJob
		for start := 0; start < total; start += batchSize {
			batches = append(batches, jobs[start:min(start+batchSize, total)])
		}

		checkpoint(b, rb.db.AdminURL)
		next := make(chan []floorJob)
		var steps floorSteps
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		start := time.Now()
		for w := range workers {
			wg.Go(func() {
				for batch := range next {
					if err := steps.run(ctx, rb.db.Pool, req, fmt.Sprint("floor-", w), batch); err != nil {
						errs <- err
						for range next { // let the feeder finish
						}
						return
					}
				}
			})
		}
		for _, batch := range batches {
			next <- batch
		}
		close(next)
		wg.Wait()
		elapsed := time.Since(start)
		close(errs)
		for err := range errs {
			require.NoError(b, err)
		}

		var ledger, held, replayed int
		require.NoError(b, rb.db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM replay_ledger),
            (SELECT count(*) FROM replay_items WHERE held), (SELECT count(*) FROM dead_letters WHERE status = 'replayed')`).
			Scan(&ledger, &held, &replayed))
		require.Equal(b, total, ledger)
		require.Zero(b, held)
		require.Equal(b, total, replayed)
		bare := barePublish(b, rb.js, total, payload)

		rate := float64(total) / elapsed.Seconds()
		b.ReportMetric(rate, "floor-msgs/s")
		b.ReportMetric(bare, "bare-publish-msgs/s")
		b.ReportMetric(rate/bare, "ratio")
		for _, s := range steps.times() {
			b.ReportMetric(float64(s.d.Microseconds())/float64(total), s.name+"-us/item")
		}
	}
}

// floorSteps sums the time of each step of the floor over its batches.
type floorSteps struct {
	mu                                                           sync.Mutex
	attempt, outcome, ledger, status, release, audit, commitTime time.Duration
}

func (s *floorSteps) times() []struct {
	name string
	d    time.Duration
} {
	return []struct {
		name string
		d    time.Duration
	}{
		{"attempt", s.attempt}, {"outcome", s.outcome}, {"ledger", s.ledger}, {"status", s.status},
		{"release", s.release}, {"audit", s.audit}, {"commit", s.commitTime},
	}
}

// run writes one batch's rows: the attempt, committed, then the rest in
// one transaction.
func (s *floorSteps) run(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, req int64, owner string, batch []floorJob) error {
	n := len(batch)
	ids, dls, seqs := make([]int64, n), make([]int64, n), make([]int64, n)
	ats, msgIDs, subjects := make([]time.Time, n), make([]string, n), make([]string, n)
	for i, j := range batch {
		ids[i], dls[i], seqs[i], ats[i], msgIDs[i], subjects[i] = j.id, j.deadLetterID, j.seq, j.at, j.msgID, j.subject
	}
	t0 := time.Now()
	rows, err := db.Query(ctx, floorAttempt, ids, owner)
	if err != nil {
		return fmt.Errorf("attempt: %w", err)
	}
	fences := map[int64]int64{}
	var id, fence int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &fence}, func() error { fences[id] = fence; return nil }); err != nil {
		return fmt.Errorf("attempt: %w", err)
	}
	if len(fences) != n {
		return fmt.Errorf("attempt: %d of %d jobs", len(fences), n)
	}
	fs := make([]int64, n)
	for i, id := range ids {
		fs[i] = fences[id]
	}
	t1 := time.Now()

	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	tag, err := tx.Exec(ctx, floorOutcome, ids, fs, seqs)
	if err != nil || tag.RowsAffected() != int64(n) {
		return fmt.Errorf("outcome: %d rows, %v", tag.RowsAffected(), err)
	}
	t2 := time.Now()
	if _, err := tx.Exec(ctx, floorLedger, ids, req, dls, msgIDs, subjects, seqs); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	t3 := time.Now()
	rows, err = tx.Query(ctx, floorStatus, dls, ats)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	moved, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(moved) != n {
		return fmt.Errorf("status: %d moved, %v", len(moved), err)
	}
	t4 := time.Now()
	if _, err := tx.Exec(ctx, floorRelease, req, dls); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	t5 := time.Now()
	events := make([]audit.Event, n)
	actor := quarantine.Actor{Subject: "replay-worker:" + owner}
	for i, j := range batch {
		events[i] = audit.Event{Actor: actor, Tenant: "acme", Action: "replay.item.replayed", ObjectType: "dead_letter",
			ObjectID: strconv.FormatInt(j.deadLetterID, 10), MessageID: j.msgID, Outcome: audit.OutcomeOK,
			After: map[string]any{"request": req, "job": j.id, "subject": j.subject, "stream": "APP", "seq": j.seq, "duplicate": false,
				"payload_sha256": floorPayloadSHA256, "first_attempt_at": floorAttemptAt, "first_published_at": floorAttemptAt}}
	}
	if _, err := audit.AppendBatch(ctx, tx, events); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	t6 := time.Now()
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	t7 := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempt += t1.Sub(t0)
	s.outcome += t2.Sub(t1)
	s.ledger += t3.Sub(t2)
	s.status += t4.Sub(t3)
	s.release += t5.Sub(t4)
	s.audit += t6.Sub(t5)
	s.commitTime += t7.Sub(t6)
	return nil
}
