package replay

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// A job whose data makes the worker panic would be claimed again at every
// lease, for ever, and never reach a person. The worker blames a panic on
// the job it had in hand (inHand), or on the only job of its claim (one
// met outside any job of a claim of several is narrowed down to a claim
// of one: narrow.go), and counts it durably, per job, in the audit log
// (replay.item.worker_failed, one row per failure, read back by the dead
// letter's index): shared by every worker and surviving restarts. After replaypolicy.MaxWorkerFailures
// the job ends (JudgeWorkerFailures): blocked, or needs reconciliation
// when a publish of it may have landed, in the same transaction as the
// failure's audit row. A process that dies (kill -9, out of memory, a
// fatal runtime error) writes nothing and so counts for no job: nothing
// tells such a death from a deploy or a host that went away.

// workerPanic is a panic met while a claim was executed (a bug, on some
// job's data, say), made an error: the panic's value and stack, the job it
// is blamed on (nil: none could be), and what became of that job.
type workerPanic struct {
	value any
	stack string
	job   *job
	// failures is how often the worker has failed on job, this time
	// included (0: not counted); ended the state the job ended in
	// ("": left to its lease); uncounted why the failure was not counted.
	failures   int
	ended      JobState
	uncounted  string
	countError error
	// countStack is the stack of a panic met while the failure was
	// counted (countFailure), "" when there was none; bare: the failure
	// was then counted without the item's data.
	countStack string
	bare       bool
	// narrowed is how many jobs the claim had when the panic could be
	// blamed on none of them (0: it was blamed on one, or the claim had
	// none), which the worker claims again in halves (narrow.go);
	// releaseError why the jobs not blamed could not be let go at once.
	narrowed     int
	releaseError error
}

func (p *workerPanic) Error() string { return fmt.Sprintf("replay worker panicked: %v", p.value) }

// asWorkerPanic is the panic value v as a workerPanic, its stack taken
// now (a deferred function that recovered it runs on the panicking
// stack) unless it was one already.
func asWorkerPanic(v any) *workerPanic {
	if p, ok := v.(*workerPanic); ok {
		return p
	}
	return &workerPanic{value: v, stack: string(debug.Stack())}
}

// panicText is what a panic said, as text bounded for a reason: a panic's
// message may carry the job's data, of any size and any bytes.
func panicText(v any) string {
	var s string
	if err, ok := v.(error); ok {
		s = err.Error()
	} else {
		s = fmt.Sprint(v)
	}
	return dlq.OutsideText(s, maxPanicText)
}

// maxPanicText bounds the panic's text in a job's result and its audit row.
const maxPanicText = 500

// inHand is the job a step of the worker works on now (nil between jobs),
// so that a panic met there is blamed on it.
type inHand struct{ j *job }

// blame, deferred by a step that works job by job, makes a panic met
// while a job is in hand that job's (a workerPanic naming it) and goes on
// panicking with it, up to runOnceGuarded.
func (h *inHand) blame() {
	v := recover()
	if v == nil {
		return
	}
	p := asWorkerPanic(v)
	if p.job == nil {
		p.job = h.j
	}
	panic(p)
}

// SQL of a failure's count. The request's row is locked first, then the
// job's, as every action on a request with jobs takes them; the job is
// counted only while this worker holds it (its fence, claimed): one taken
// over or ended since is not this failure's to end. What its rows name
// (tenant, message and operation ids, subject) is read with it, not taken
// from the claim the panic interrupted, which may not even have loaded it
// (claim). A failure is one audit row of the job's dead letter (the audit
// log's object index).
const (
	lockFailedJob = `SELECT j.first_attempt_at, r.tenant, i.msg_id, i.operation_id, i.correlation_id, i.subject
        FROM replay_jobs j
        JOIN replay_requests r ON r.id = j.request_id
        CROSS JOIN LATERAL (SELECT * FROM replay_items i WHERE i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id LIMIT 1) i
        WHERE j.id = $1 AND j.fence = $2 AND j.state = 'claimed' FOR UPDATE OF j`
	unmarkFailedJob = `UPDATE replay_jobs SET first_attempt_at = CASE WHEN $2 THEN NULL ELSE first_attempt_at END,
        handed_at = CASE WHEN $3 THEN NULL ELSE handed_at END,
        first_published_at = CASE WHEN $4 THEN NULL ELSE first_published_at END
        WHERE id = $1 -- locked by lockFailedJob`
	countFailures = `SELECT count(*) FROM audit_log
        WHERE object_id = $1 AND object_type = 'dead_letter' AND action = '` + audit.ActionReplayItemWorkerFailed + `' AND after->>'job' = $2`
)

// bareText is the panic's text in a failure counted bare (countFailure).
const bareText = "(not recorded: counting this failure with the item's data panicked too; the worker's log has both panics)"

// countFailure is failedOn with a panic in it made an error: failedOn
// runs while runOnceGuarded recovers a panic, on the same job's data the
// first one may have met, and a second panic there would otherwise leave
// the worker and end the process. The failure's transaction rolls back as
// the panic unwinds it; logPanic logs the second panic's stack
// (countStack) with the first.
//
// A failure that cannot be counted would leave the job to be claimed, and
// failed on, at every lease for ever: the count is what ends it. So a
// count that panicked is tried once more, bare: with nothing of the item's
// data in its rows (no panic text, message or operation id, subject;
// bareText says why), which is what such a second panic meets (the item's
// data, the panic's own value, as the first panic did). One that panics
// even bare is not the item's data but the worker's own bug, met on any
// job's count: the job is left to its lease, as a crash leaves it (no
// state changes without its audit row), and the worker's log says so at
// every failure. Tried once only: a third way of writing the same row
// would meet the same bug.
func (w *Worker) countFailure(ctx context.Context, p *workerPanic) error {
	stack, err := w.tryCount(ctx, p, false)
	if stack == "" {
		return err
	}
	p.countStack = stack
	if p.failures > 0 || p.uncounted != "" {
		return err // committed: the panic came after, finishing the request
	}
	if _, bareErr := w.tryCount(ctx, p, true); bareErr != nil {
		return errors.Join(err, bareErr)
	}
	p.bare = true
	return nil
}

// tryCount is failedOn (bare: without the item's data), returning the
// stack of a panic in it ("" when there was none) and the panic as its
// error.
func (w *Worker) tryCount(ctx context.Context, p *workerPanic, bare bool) (stack string, err error) {
	defer func() {
		if v := recover(); v != nil {
			stack = string(debug.Stack())
			err = fmt.Errorf("count the worker's failure on replay job %d: it panicked too: %v", p.job.id, v)
		}
	}()
	return "", w.failedOn(ctx, p, bare)
}

// failedOn counts the failure p against p.job, with its audit row, and
// ends the job when the rules say it has failed too often
// (JudgeWorkerFailures, then JudgeUnsent: a publish of it that may have
// landed needs a person, never "not sent"), recording it as any outcome
// is recorded (recordIn), in the same transaction; then it ends the
// request if nothing of it is left to run. A job not ended is left to its
// lease, as a crash leaves it. bare: the rows carry nothing of the item's
// data (countFailure). It notes on p what it did, once it is committed (a
// transaction that fails or panics notes nothing).
func (w *Worker) failedOn(ctx context.Context, p *workerPanic, bare bool) error {
	// What the panic interrupted is not trusted, nor touched: the job is
	// counted and recorded as a copy, its names read from the database.
	held := p.job
	// A worker that is stopping still counts; the record's time bounds it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.RecordTimeout)
	defer cancel()
	text := bareText
	if !bare {
		text = panicText(p.value)
	}
	var (
		failures  int
		ended     JobState
		uncounted string
		tenant    string
	)
	err := pgx.BeginTxFunc(ctx, w.svc.pool, workerTx, func(tx pgx.Tx) error {
		failures, ended, uncounted = 0, "", ""
		j := *held
		if _, err := tx.Exec(ctx, lockRequest, j.requestID); err != nil {
			return err
		}
		var attempted *time.Time
		if err := tx.QueryRow(ctx, lockFailedJob, j.id, j.fence).Scan(&attempted, &j.tenant, &j.msgID, &j.opID, &j.corrID, &j.subject); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				uncounted = "this worker no longer holds the job (its lease was taken over, or a person ended it)"
				return nil
			}
			return err
		}
		tenant = j.tenant
		if bare {
			j.msgID, j.opID, j.corrID, j.subject = "", "", "", ""
		}
		var before int
		if err := tx.QueryRow(ctx, countFailures, strconv.FormatInt(j.deadLetterID, 10), strconv.FormatInt(j.id, 10)).Scan(&before); err != nil {
			return err
		}
		failures = before + 1
		if _, err := audit.AppendBatch(ctx, tx, []audit.Event{w.failedEvent(&j, failures, text)}); err != nil {
			return err
		}
		// What the panic interrupted is not trusted: whether a publish of
		// the job may have landed is what the database says
		// (first_attempt_at, set by a gate before any send), unless this
		// claim's gate made that mark and the job's message never reached
		// the NATS client (handed is set before the call): then nothing of
		// it was ever sent, and the mark is undone, so that the job is not
		// taken for one that may have landed. So is the gate's handed_at of
		// a job no claim ever handed (unhanded), so that it is no one's
		// replay, and its reservation of the job's first publish
		// (unreserved), as the record undoes it: a message planted under
		// the job's headers since would be taken for that publish (review
		// round 41).
		neverSent := j.firstAttempt && j.firstAttemptAt == nil && !j.handed
		if neverSent {
			attempted = nil
		}
		v := replaypolicy.JudgeWorkerFailures(failures, text)
		if v.Outcome == replaypolicy.Go {
			if neverSent || j.unhanded() || j.unreserved() {
				if _, err := tx.Exec(ctx, unmarkFailedJob, j.id, neverSent, j.unhanded(), j.unreserved()); err != nil {
					return err
				}
			}
			return nil // left to its lease, as a crash leaves it
		}
		j.firstAttemptAt, j.firstAttempt, j.resetAttempt = attempted, neverSent, neverSent
		j.stream, j.seq, j.duplicate, j.deferred, j.notBefore = "", 0, false, false, nil
		j.unsent(v)
		lost, err := w.recordIn(ctx, tx, []*job{&j})
		if err == nil && len(lost) > 0 {
			err = errors.New("its fence refused the record") // it was locked under that fence
		}
		ended = j.state
		return err
	})
	if err != nil {
		return fmt.Errorf("count the worker's failure on replay job %d: %w", held.id, err)
	}
	p.failures, p.ended, p.uncounted = failures, ended, uncounted
	if tenant != "" && held.tenant == "" {
		held.tenant = tenant // for the log, of a job the claim did not load
	}
	if p.ended == "" {
		return nil
	}
	if err := w.svc.finish(ctx, []int64{held.requestID}, worker(w.cfg.Owner)); err != nil {
		// The sweeper ends it (FinishIdle).
		return fmt.Errorf("finish replay request %d: %w", held.requestID, err)
	}
	return nil
}

// failedEvent is the audit row of the worker's n-th failure on j (text:
// what the panic said).
func (w *Worker) failedEvent(j *job, n int, text string) audit.Event {
	return audit.Event{
		Actor: worker(w.cfg.Owner), Tenant: j.tenant, Action: audit.ActionReplayItemWorkerFailed,
		ObjectType: "dead_letter", ObjectID: strconv.FormatInt(j.deadLetterID, 10), MessageID: j.msgID, OperationID: j.opID,
		Reason:  fmt.Sprintf("the worker failed on this item (%d of %d): %s", n, replaypolicy.MaxWorkerFailures, text),
		Outcome: audit.OutcomeError,
		After: map[string]any{"request": j.requestID, "job": j.id, "failures": n,
			"limit": replaypolicy.MaxWorkerFailures, "panic": text},
	}
}
