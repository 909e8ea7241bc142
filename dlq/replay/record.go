package replay

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

const recordJobs = `
UPDATE replay_jobs j SET state = u.state, result = u.result, pub_stream = u.stream, pub_seq = u.seq,
    duplicate = u.dup, lease_owner = '', lease_until = NULL, updated_at = now(),
    not_before = CASE WHEN u.not_before IS NOT NULL THEN u.not_before
                      WHEN u.state IN ('unknown', 'pending') THEN now() + $8::interval
                      ELSE j.not_before END,
    first_attempt_at = CASE WHEN u.reset THEN NULL ELSE j.first_attempt_at END,
    -- a first publish this claim's gate reserved and never handed to NATS (job.unreserved): none
    first_published_at = CASE WHEN u.unreserved THEN NULL ELSE j.first_published_at END,
    -- the gate's mark of a job none of whose publishes may have landed (job.nothingLanded): no one's replay
    handed_at = CASE WHEN u.unlanded THEN NULL ELSE j.handed_at END,
    -- a deferral by the message that deferred it last does not count (replaypolicy.Ack.CountsDeferral)
    deferrals = j.deferrals + u.counted::int,
    deferred_by = CASE WHEN u.deferred THEN u.deferred_by ELSE j.deferred_by END,
    waited_for = u.waited_for -- as claimed, judged and ended by this claim (replaypolicy.Job.WaitedFor)
FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bool[],
            $9::timestamptz[], $10::bool[], $11::bool[], $12::bool[], $13::bool[], $14::text[], $15::bool[], $16::text[])
    AS u(id, fence, state, result, stream, seq, dup, not_before, reset, deferred, unlanded, counted, deferred_by, unreserved, waited_for)
WHERE j.id = u.id
  AND j.fence = u.fence      -- a worker whose lease was taken over records nothing
  AND j.state = 'claimed'    -- nor does anyone after a cancel
RETURNING j.id, j.first_attempt_at, j.first_published_at`

const (
	// Every replay the broker stored goes into the ledger, in one
	// statement: several of one identity too (a dead letter that came back
	// from a replay is replayed again: ledger.go), each of which counts
	// against the items it does not explain. Two replays of one identity
	// are kept from being published at once by the publish gate (the
	// identities' locks, the ledger and the jobs in flight read again
	// under them: guardIdentities), not here; a unique key on the identity
	// would only forget one the broker stored (migration 0045). A job's
	// row is written once: recordJobs records a job replayed only from
	// claimed, under its fence, so a second row of one job (its primary
	// key) is a fault that fails the record, never a row dropped.
	insertLedger = `INSERT INTO replay_ledger (job_id, request_id, dead_letter_id, tenant, class, msg_id,
        operation_id, subject, stream, seq, duplicate, dedupe_key, operation_key)
        SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[],
            $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bool[], $12::bool[], $13::bool[])`

	// An item whose job ended lets go of its dead letter: another request
	// may take it (a failed or blocked one, say). One that needs
	// reconciliation keeps it until a person decides. One statement per
	// request ($1), its items by key ($2 their dead letters): the primary
	// key's probes, never a scan of the request's items.
	releaseEnded = `UPDATE replay_items SET held = false WHERE request_id = $1 AND dead_letter_id = ANY($2) AND held`
	// The requests a record touched are locked, in id order, after it
	// committed, before their jobs are read again: of two workers recording
	// the last jobs of one request, the second sees the first's and
	// finishes it. (Locked for that moment only: a worker publishing
	// reserves its slots on the same row.)
	lockRequests = `SELECT id FROM replay_requests WHERE id = ANY($1) ORDER BY id FOR UPDATE`
	// A request runs once a publish of it may have landed (a job of it
	// recorded attempted: mayHaveLanded), not when a claim published
	// nothing (NATS away, a job deferred or refused before or by the
	// broker): until then its approval may still expire
	// (replaypolicy.JudgeRun), and its page says when. It returns the
	// requests it moved, each of which gets its audit row (runningEvent).
	markRunning = `UPDATE replay_requests SET status = 'running', version = version + 1
        WHERE id = ANY($1) AND status = 'approved' -- once, from approved
        RETURNING id, tenant`
	// A request ends when no job of it is left to run, and ends again when
	// a person settles an item of one done with problems; a cancelled or
	// voided request stays so.
	finishRequest = `UPDATE replay_requests r SET status = $2, status_reason = $3, finished_at = now(), version = version + 1
        WHERE id = $1 AND status IN ('approved', 'running', 'done_with_problems')
          AND NOT EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = r.id AND j.state IN ('pending', 'claimed', 'deferred', 'unknown'))`
)

// The dead letters of ended jobs ($1 ids, $2 their times, $3 the jobs'
// requests) take the outcome as their status, but only where the job's
// request still holds the dead letter: a late record of a request that let
// go of it never changes another request's item. The counters follow
// (dlq.StatusMove), for the rows changed only; each statement returns the
// dead letters it changed. The hold is read by the item's key, one probe
// per dead letter (as a join, a plan on stale statistics, as a request's
// items are right after its submit, read every item of the request).
const jobDeadLetters = `
    SELECT d.id, d.dead_lettered_at, d.status
    FROM unnest($1::bigint[], $2::timestamptz[], $3::bigint[]) AS k(id, at, request_id)
    JOIN dead_letters d ON d.id = k.id AND d.dead_lettered_at = k.at
    WHERE (SELECT i.held FROM replay_items i WHERE i.request_id = k.request_id AND i.dead_letter_id = k.id) -- still this request's`

// doneFrom are the statuses a job that ended done (replayed, or skipped as
// done already) moves its dead letter from: never over discarded or
// resolved.
const doneFrom = `('replay_requested', 'replaying', 'replay_failed', 'quarantined', 'needs_reconciliation')`

var (
	markReplayed = dlq.StatusMove(jobDeadLetters+`
      AND d.status IN `+doneFrom+`
    FOR UPDATE OF d`, `'replayed'`, "id")
	markFailed = dlq.StatusMove(jobDeadLetters+`
      AND d.status IN ('replay_requested', 'replaying') -- a success elsewhere wins
    FOR UPDATE OF d`, `'replay_failed'`, "id")
	markNeedsReconciliation = dlq.StatusMove(jobDeadLetters+`
      AND d.status IN ('replay_requested', 'replaying') -- only what a replay holds
    FOR UPDATE OF d`, `'needs_reconciliation'`, "id")
	// A job skipped because a person found its identity's replay applied
	// (job.appliedTwin): its dead letter is resolved, as that item's is
	// (markApplied), not replayed: no broker stored a replay of it.
	markSkippedApplied = dlq.StatusMove(jobDeadLetters+`
      AND d.status IN `+doneFrom+`
    FOR UPDATE OF d`, `'resolved'`, "id")
	markRequeued = dlq.StatusMove(jobDeadLetters+`
      AND d.status IN ('replay_requested', 'replaying', 'needs_reconciliation') -- only what a replay holds goes back
    FOR UPDATE OF d`, `'quarantined'`, "id")
)

// mayHaveLanded says whether a publish of j may have landed as its record
// will stand: a gate marked it attempted (in this claim or an earlier one)
// and no answer since said that the attempt did not land (resetAttempt).
// Its first_attempt_at is set after the record exactly then.
func (j *job) mayHaveLanded() bool {
	return (j.firstAttempt || j.firstAttemptAt != nil) && !j.resetAttempt
}

// stillUnknown records j, sent back to wait without being published in
// this claim (released: pending), as unknown when a publish of it may have
// landed (mayHaveLanded): its outcome is still what it was, unknown, and
// every count, chip and page shows it so (invariant 13), never "to go" as
// if nothing of it had ever been sent. Its result says so after why it
// was released. One place for every path that releases a job: the
// claim's judge, the publish's stops, a window that could not be read.
func (j *job) stillUnknown() {
	if j.state != JobPending || !j.mayHaveLanded() {
		return
	}
	j.state = JobUnknown
	j.result += "; " + replaypolicy.StillUnknown
}

// unhanded says whether nothing of j was ever handed to the NATS client
// as its record will stand: no earlier claim may have handed it (its
// handed_at was not set when this one claimed it) and this one did not.
// A worker that dies before its record leaves handed_at set: the job may
// have been sent.
func (j *job) unhanded() bool {
	return !j.handedBefore && !j.handed
}

// nothingLanded says whether no publish of j may have landed as its record
// will stand: nothing of it was handed to NATS (unhanded), or this claim
// handed it, the answer says that publish did not land (resetAttempt: the
// broker kept a message not ours under its id, or refused it, or it never
// left the worker) and no earlier claim may have handed one that did (its
// handed_at was not set when this one claimed it: a record after such an
// answer cleared it). A gate of this claim may have set handed_at before
// the send; the record clears it then (recordJobs), under the fence, so
// that the job is no one's replay (firstReplayJob, dlq's linkReplays),
// whatever it ends as: one reserved and then cancelled, stopped or
// released unsent, and one the broker dropped as a duplicate of a message
// not ours, deferred and then cancelled, or suppressed. Taken for its dead
// letter's first replay, such a job would make the replay a returned dead
// letter really came back from count against it. A job one of whose
// publishes may have landed keeps it for good (a later answer that this
// one did not land says nothing of the earlier).
func (j *job) nothingLanded() bool {
	return j.unhanded() || (!j.handedBefore && j.resetAttempt)
}

// unreserved says whether the record undoes the first_published_at a
// gate of this claim set: the job's first publish ever, reserved, and
// never handed to NATS (the lease's publishing time ran out, the request
// stopped, the slot came late). A message under its id stored after that
// reservation is no earlier publish of the job's (OursKept judges by
// first_published_at), and a copy planted with its headers and payload
// would be taken for one. A job handed to NATS keeps it for good, whatever
// the answer: one answered "no responders" may have been stored all the
// same by the client's own re-publish.
// (TestRev40PlantAfterAnUnsentReservationIsNotOurs,
// TestRev40PlantAfterAnUnsentReservationThenALostAckIsNotOurs)
func (j *job) unreserved() bool {
	return j.reservedFirst && !j.handed
}

// storable makes j's texts from outside storable (dlq.CleanText): its
// result names what services, brokers and messages read back said (a
// revalidation's reason, a broker's error, a kept message's headers), its
// stream is the PubAck's, which any subscriber of the subject may send. A
// NUL or bytes not UTF-8 in any of them made PostgreSQL refuse the record
// at every try: the worker kept the outcome, claimed nothing else for its
// tries, let it go, and the next claim met the same answer (review round
// 41). Recorded once cleaned; the bytes the texts came as are in no
// promise.
func (j *job) storable() {
	j.result, j.stream, j.deferredBy = dlq.CleanText(j.result), dlq.CleanText(j.stream), dlq.CleanText(j.deferredBy)
}

// recordState is what becomes of an outcome in the record: the dead
// letter's status (the SQL that sets it) and whether the item lets go of
// its dead letter.
type recordState struct {
	mark    string
	release bool
}

// recordStates is the dead letter's status and hold for each outcome. A
// job that waits (pending, deferred, unknown) changes neither.
func recordStates() map[JobState]recordState {
	return map[JobState]recordState{
		JobReplayed:            {markReplayed, true},
		JobSkipped:             {markReplayed, true}, // the ledger or the dead letter says it was replayed
		JobSuppressed:          {markFailed, true},
		JobBlocked:             {markFailed, true},
		JobNeedsReconciliation: {markNeedsReconciliation, false},
		JobCancelled:           {markRequeued, true},
	}
}

// renewLease extends the lease of the claimed jobs ($1 ids, $2 their
// fencing tokens) that this worker still holds, by $3 from now. A job
// another worker took over (its fence moved on) or that a cancel ended is
// not renewed: its result is not ours to record.
const renewLease = `UPDATE replay_jobs j SET lease_until = now() + $3::interval
    FROM unnest($1::bigint[], $2::bigint[]) AS u(id, fence)
    WHERE j.id = u.id
      AND j.fence = u.fence      -- a worker whose lease was taken over renews nothing
      AND j.state = 'claimed'    -- nor one whose job a cancel ended
RETURNING j.id`

// maxRenewals bounds the leases one record takes without recording
// anything in between: each failed part halves the next, so a database
// that is slow records in smaller parts; what one that answers nothing
// leaves is kept for the next RunOnce (keep).
const maxRenewals = 3

// record writes the outcomes under the fencing tokens in parts
// (recordOnce, each part one transaction), then ends the requests with
// nothing left to run (finish). A part is sized by how long recording took
// so far (recordPace) and halved when an attempt fails; when what is left
// of the lease would not cover the next part, the lease of the jobs not yet
// recorded is renewed first, under their fencing tokens. So what was
// published is recorded by the worker that published it, however slow the
// database, and never by a worker whose lease was taken over. A worker
// that is stopping still records (ctx's cancel is not followed; the lease
// is).
//
// When the lease ends with outcomes not recorded (no renewal answered
// before it did, or maxRenewals of them did and no part was recorded: a
// failover, a lock), the worker keeps them (keep) and records them before
// it claims anything more (recordKept), under the same fencing tokens:
// the fence, not the lease, keeps an outcome of a job another worker took
// over out of the record, and only a claim in this same database moves
// it. So a PubAck the worker holds is recorded once the database answers,
// not forgotten at the lease's end (the next claim would know only that
// the job was published, and a person would have to find out what the
// broker had said). Every failure names the PubAcks it left unrecorded
// (pubAcks), so that on-call can reconcile them should the worker die.
func (w *Worker) record(ctx context.Context, jobs []*job, leaseEnd time.Time) error {
	ctx = context.WithoutCancel(ctx)
	requests := map[int64]bool{}
	for _, j := range jobs {
		requests[j.requestID] = true
	}
	ids := slices.Sorted(maps.Keys(requests))
	rest := jobs
	renewals := 0 // since the last part recorded
	backoff := 50 * time.Millisecond
	// An attempt ends a fifth of the lease before the lease does, so that
	// the lease is renewed while it is still this worker's: one renewed
	// after it ran out may find the jobs taken over.
	reserve := w.cfg.Lease / 5
	window := min(w.cfg.Lease-reserve, w.cfg.RecordTimeout) // the longest attempt
	renewed := false                                        // the lease was renewed since the last attempt
	for attempt := 1; len(rest) > 0; attempt++ {
		part := rest[:min(len(rest), w.pace.part(w.cfg.Batch, window))]
		left := time.Until(leaseEnd) - reserve
		if !renewed && left < min(w.pace.needs(len(part)), window) {
			if renewals == maxRenewals {
				return w.keep(rest, fmt.Errorf("record replay results: the lease ended after %d attempts and %d renewals, %d of %d jobs recorded",
					attempt-1, renewals, len(jobs)-len(rest), len(jobs)))
			}
			held, end, err := w.renew(ctx, rest)
			if err != nil {
				if time.Now().Add(backoff).After(leaseEnd) {
					return w.keep(rest, fmt.Errorf("record replay results: the lease ended after %d attempts, %d of %d jobs recorded: %w",
						attempt, len(jobs)-len(rest), len(jobs), err))
				}
				w.log.Warn("renewing the lease of replay jobs failed; retrying", "owner", w.cfg.Owner, "jobs", len(rest),
					"pub_acks", pubAcks(rest), "err", err)
				time.Sleep(backoff + rand.N(backoff/2))
				backoff = min(2*backoff, 2*time.Second)
				continue
			}
			renewals, renewed = renewals+1, true
			if len(held) < len(rest) {
				renewed := make(map[*job]bool, len(held))
				for _, j := range held {
					renewed[j] = true
				}
				w.logLost(slices.DeleteFunc(slices.Clone(rest), func(j *job) bool { return renewed[j] }))
			}
			rest, leaseEnd = held, end
			continue
		}
		renewed = false
		actx, cancel := context.WithTimeout(ctx, min(w.cfg.RecordTimeout, max(left, time.Millisecond)))
		began := time.Now()
		lost, err := w.recordOnce(actx, part)
		cancel()
		if err == nil {
			w.pace.recorded(len(part), time.Since(began))
			w.logLost(lost)
			rest, renewals, backoff = rest[len(part):], 0, 50*time.Millisecond
			continue
		}
		w.pace.failed(len(part))
		if w.recordFailed != nil {
			w.recordFailed(attempt, err)
		}
		w.log.Warn("recording replay results failed; retrying in smaller parts", "owner", w.cfg.Owner, "attempt", attempt,
			"jobs", len(part), "pub_acks", pubAcks(part), "err", err)
		time.Sleep(min(backoff+rand.N(backoff/2), max(time.Until(leaseEnd)-reserve, 0)))
		backoff = min(2*backoff, 2*time.Second)
	}
	// Ending the requests is not fenced (it counts what every worker
	// recorded); what is left running now the sweeper ends (FinishIdle).
	for {
		actx, cancel := context.WithTimeout(ctx, min(w.cfg.RecordTimeout, max(time.Until(leaseEnd), time.Millisecond)))
		err := w.svc.finish(actx, ids, worker(w.cfg.Owner))
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().Add(backoff).After(leaseEnd) {
			return fmt.Errorf("finish replay requests: %w", err)
		}
		time.Sleep(backoff + rand.N(backoff/2))
		backoff = min(2*backoff, 2*time.Second)
	}
}

// unrecorded are the outcomes a worker holds that the lease ended before it
// recorded (keep).
type unrecorded struct {
	jobs []*job
	// named is how many there were when their PubAcks were last logged:
	// they are logged again only when that changed, not at every failed
	// try of a database that is down.
	named int
	// failed counts the tries in a row that failed with PostgreSQL in
	// reach (WorkerConfig.KeptTries).
	failed int
}

// keep holds jobs, whose outcomes the lease ended before recording
// (record), for recordKept, logs their PubAcks and returns err saying
// so. Their payloads and headers are let go (a claim may hold 16 MiB of
// them): recording needs only the payload's SHA-256 for the audit row
// (publishedAfter), which is kept. Before, the row of a kept outcome
// named the SHA-256 of no bytes, for good (review round 39).
func (w *Worker) keep(jobs []*job, err error) error {
	for _, j := range jobs {
		if j.keptSHA256 == nil {
			sum := sha256.Sum256(j.payload)
			j.keptSHA256 = sum[:]
		}
		j.payload, j.headers = nil, nil
	}
	w.unrecorded.jobs = append(w.unrecorded.jobs, jobs...)
	if n := len(w.unrecorded.jobs); n != w.unrecorded.named {
		w.unrecorded.named = n
		w.log.Warn("replay outcomes not recorded in the lease; kept to record before the next claim", "owner", w.cfg.Owner,
			"jobs", n, "pub_acks", pubAcks(w.unrecorded.jobs), "err", err)
	}
	return fmt.Errorf("%w; %d outcomes kept to record before the next claim", err, len(jobs))
}

// recordKept records the outcomes a record kept (keep), renewing their
// lease first under their fencing tokens (renewLease needs no live lease),
// so that no other worker takes them over while they are recorded. RunOnce
// calls it before it claims, and claims nothing while it fails: the
// worker's database is the one that does not answer, and the outcomes it
// holds would otherwise grow by a claim each time. It returns nil when
// nothing is left to record.
func (w *Worker) recordKept(ctx context.Context) error {
	if len(w.unrecorded.jobs) == 0 {
		return nil
	}
	jobs := w.unrecorded.jobs
	w.unrecorded.jobs = nil
	err := w.record(ctx, jobs, time.Now())
	if len(w.unrecorded.jobs) == 0 {
		w.unrecorded = unrecorded{}
	}
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && !dlq.Unreachable(err) && !dlq.LostRace(err) {
		w.unrecorded.failed++
	}
	if w.unrecorded.failed >= w.cfg.KeptTries {
		// A failure that lasts with the database answering (a constraint,
		// a lock held for good) would keep this worker from claiming for
		// ever, and its jobs from every other worker, whose claims wait
		// for the lease this one renews. It lets them go: each job is
		// claimed again once its lease ends, knowing only that it was
		// published; this line says what the broker answered.
		kept := w.unrecorded.jobs
		w.unrecorded = unrecorded{}
		for _, j := range kept {
			w.logOutcome(slog.LevelError, fmt.Sprintf("replay outcome not recorded: recording failed %d times with PostgreSQL answering; the worker lets it go and claims again, and its job is claimed again once its lease ends", w.cfg.KeptTries),
				j, "err", err)
		}
	}
	return fmt.Errorf("record the outcomes of an earlier claim: %w", err)
}

// recordAtStop is a stopping worker's last try at the outcomes it kept
// (keep): one transaction within RecordTimeout, under their fencing
// tokens. Each one it cannot record is logged at error level, with the
// PubAck's stream and sequence when one came: the next claim of the job
// knows only that it was published, and may end it needs_reconciliation
// once the target's duplicate window has passed; the log line is then
// what says whether, and where, the broker stored it.
func (w *Worker) recordAtStop(ctx context.Context) {
	if len(w.unrecorded.jobs) == 0 {
		return
	}
	jobs := w.unrecorded.jobs
	w.unrecorded = unrecorded{}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.RecordTimeout)
	defer cancel()
	lost, err := w.recordOnce(ctx, jobs)
	if err == nil {
		w.logLost(lost)
		return
	}
	for _, j := range jobs {
		w.logOutcome(slog.LevelError, "replay outcome not recorded: the worker stopped first; its job is claimed again once its lease ends", j,
			"err", err)
	}
}

// logLost logs, one line each, the outcomes of jobs the record refused
// (their fence or their state): another worker took the job over (its
// lease had ended) and judges it again knowing only that it was
// published, or a cancel or stop of its request ended it.
func (w *Worker) logLost(jobs []*job) {
	for _, j := range jobs {
		w.logOutcome(slog.LevelWarn, "replay outcome not recorded: the job is no longer this worker's (another worker took it over, or a cancel ended it)", j)
	}
}

// logOutcome logs msg about j's outcome, not recorded: its item, and what
// the broker answered (stream and seq when a PubAck came).
func (w *Worker) logOutcome(level slog.Level, msg string, j *job, args ...any) {
	args = append([]any{"owner", w.cfg.Owner, "request", j.requestID, "job", j.id, "dead_letter", j.deadLetterID, "tenant", j.tenant,
		"msg_id", j.msgID, "correlation_id", j.corrID, "state", j.state, "result", j.result, "stream", j.stream, "seq", j.seq}, args...)
	w.log.Log(context.Background(), level, msg, args...)
}

// pubAcks names the PubAcks of jobs, stream:sequences, runs of
// sequences as first-last ("APP:1-57,60 ORDERS:3"); "none" when no job
// has one.
func pubAcks(jobs []*job) string {
	byStream := map[string][]uint64{}
	for _, j := range jobs {
		if j.stream != "" {
			byStream[j.stream] = append(byStream[j.stream], j.seq)
		}
	}
	if len(byStream) == 0 {
		return "none"
	}
	var b strings.Builder
	for _, stream := range slices.Sorted(maps.Keys(byStream)) {
		seqs := byStream[stream]
		slices.Sort(seqs)
		seqs = slices.Compact(seqs)
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(stream + ":")
		for i := 0; i < len(seqs); {
			k := i
			for k+1 < len(seqs) && seqs[k+1] == seqs[k]+1 {
				k++
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatUint(seqs[i], 10))
			if k > i {
				b.WriteString("-" + strconv.FormatUint(seqs[k], 10))
			}
			i = k + 1
		}
	}
	return b.String()
}

// renew extends the lease of jobs this worker still holds (renewLease) and
// returns them, and when the new lease ends on the worker's clock.
func (w *Worker) renew(ctx context.Context, jobs []*job) ([]*job, time.Time, error) {
	ids, fences := make([]int64, len(jobs)), make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i], fences[i] = j.id, j.fence
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.RecordTimeout)
	defer cancel()
	began := time.Now()
	rows, err := w.svc.pool.Query(ctx, renewLease, ids, fences, w.cfg.Lease.String())
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("renew the lease of replay jobs: %w", err)
	}
	renewed, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("renew the lease of replay jobs: %w", err)
	}
	kept := make(map[int64]bool, len(renewed))
	for _, id := range renewed {
		kept[id] = true
	}
	held := slices.DeleteFunc(slices.Clone(jobs), func(j *job) bool { return !kept[j.id] })
	return held, began.Add(w.cfg.Lease), nil
}

// recordPace is how fast a worker's database records outcomes: the time
// one job took in the last parts recorded (zero before the first), and the
// size of the next part. A claim is sized by it too (claimLimit), so that
// recording a claim fits in what its lease leaves for it.
type recordPace struct {
	perJob time.Duration
	size   int // 0: the claim's size
}

// part is how many jobs the next part records at most (batch at most):
// as many as half of window, the longest attempt, covers at the pace
// seen, and never more than the last part that failed let through.
func (p *recordPace) part(batch int, window time.Duration) int {
	n := batch
	if p.perJob > 0 {
		n = min(n, max(1, int(window/2/p.perJob)))
	}
	if p.size > 0 {
		n = min(n, p.size)
	}
	return n
}

// needs is the lease a part of n jobs needs left: twice what it took at
// the pace seen, and at least a tenth of a second.
func (p *recordPace) needs(n int) time.Duration {
	return max(2*time.Duration(n)*p.perJob, 100*time.Millisecond)
}

// recorded learns from a part of n jobs recorded in d; the next part may
// grow again.
func (p *recordPace) recorded(n int, d time.Duration) {
	per := d / time.Duration(n)
	if p.perJob == 0 {
		p.perJob = per
	} else {
		p.perJob = (p.perJob + per) / 2
	}
	if p.size > 0 {
		p.size *= 2
	}
}

// failed halves the next part after a part of n jobs was not recorded.
func (p *recordPace) failed(n int) {
	p.size = max(1, n/2)
}

// claimLimit is how many jobs a claim takes: Batch, or fewer when the
// pace of recording says that a claim of Batch could not be recorded in a
// sixth of the lease (half of what a claim leaves for recording).
func (p *recordPace) claimLimit(cfg WorkerConfig) int {
	if p.perJob <= 0 {
		return cfg.Batch
	}
	return min(cfg.Batch, max(1, int(cfg.Lease/6/p.perJob)))
}

// recordOnce writes the running status of the requests a publish of which
// may have landed, then the outcomes under the fencing tokens, and with
// them the ledger, the dead letters' statuses and the audit rows (one per
// request it moved to running, one per outcome), in one transaction
// (recordIn). It returns the jobs whose fence refused the outcome
// (another worker took them over).
func (w *Worker) recordOnce(ctx context.Context, jobs []*job) (lost []*job, err error) {
	err = pgx.BeginTxFunc(ctx, w.svc.pool, workerTx, func(tx pgx.Tx) error {
		lost, err = w.recordIn(ctx, tx, jobs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return lost, nil
}

// recordIn is recordOnce in tx: also the record of a job the worker
// failed on too often (failedOn), with its failure's audit row.
func (w *Worker) recordIn(ctx context.Context, tx pgx.Tx, jobs []*job) ([]*job, error) {
	n := len(jobs)
	ids, fences, seqs := make([]int64, n), make([]int64, n), make([]int64, n)
	states, results, streams := make([]string, n), make([]string, n), make([]string, n)
	dups, resets, deferred, unlanded, counted := make([]bool, n), make([]bool, n), make([]bool, n), make([]bool, n), make([]bool, n)
	unreserved := make([]bool, n)
	deferredBy, waitedFor := make([]string, n), make([]string, n)
	notBefore := make([]*time.Time, n)
	byID := map[int64]*job{}
	started := map[int64][]*job{} // requests a publish of which may have landed: those jobs
	released := map[int64]bool{}  // jobs sent back to wait unsent: nothing happened to them to audit
	for i, j := range jobs {
		if !j.releaseJudged {
			wasPending := j.state == JobPending
			j.stillUnknown()
			// A release of a job an earlier claim may have published
			// leaves it unknown: that is news (its audit row says so)
			// unless it was unknown already when claimed.
			j.released = wasPending && (j.state == JobPending || j.prevState == JobUnknown)
			j.releaseJudged = true
		}
		if j.released {
			released[j.id] = true
		}
		j.storable()
		ids[i], fences[i], states[i], results[i], streams[i], seqs[i], dups[i] = j.id, j.fence, string(j.state), j.result, j.stream, int64(j.seq), j.duplicate
		notBefore[i], resets[i], deferred[i], unlanded[i] = j.notBefore, j.resetAttempt, j.deferred, j.nothingLanded()
		counted[i], deferredBy[i], unreserved[i], waitedFor[i] = j.deferred && j.deferralCounts, j.deferredBy, j.unreserved(), j.waitedFor
		byID[j.id] = j
		if j.mayHaveLanded() {
			started[j.requestID] = append(started[j.requestID], j)
		}
	}
	reqIDs := slices.Sorted(maps.Keys(started))
	// The requests first, as the console's actions on a request with
	// jobs (cancel, stop, reconcile) take a request's row before its
	// jobs and dead letters: a record that took them the other way
	// round could deadlock with one. Only the first record of a request
	// that published something locks its row (while it is approved);
	// later ones, and ones that published nothing, take no lock on it.
	var moved []runningRequest // the requests markRunning moved: each gets its audit row
	if len(reqIDs) > 0 {
		rows, err := tx.Query(ctx, markRunning, reqIDs)
		if err != nil {
			return nil, fmt.Errorf("mark requests running: %w", err)
		}
		if moved, err = pgx.CollectRows(rows, pgx.RowToStructByPos[runningRequest]); err != nil {
			return nil, fmt.Errorf("mark requests running: %w", err)
		}
	}
	rows, err := tx.Query(ctx, recordJobs, ids, fences, states, results, streams, seqs, dups, w.cfg.Retry.String(), notBefore, resets, deferred, unlanded, counted, deferredBy, unreserved, waitedFor)
	if err != nil {
		return nil, fmt.Errorf("record replay jobs: %w", err)
	}
	kept, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (int64, error) {
		// When the job was first attempted and first published, as
		// the gates set them in the database, for its audit row
		// (publishedAfter): a first attempt's is not on the job.
		var id int64
		var attempted, published *time.Time
		if err := r.Scan(&id, &attempted, &published); err != nil {
			return 0, err
		}
		if j := byID[id]; j != nil {
			j.firstAttemptAt = attempted
			if published != nil {
				j.firstPublishedAt = *published
			}
		}
		return id, nil
	})
	if err != nil {
		return nil, fmt.Errorf("record replay jobs: %w", err)
	}
	written := make(map[int64]bool, len(kept))
	for _, id := range kept {
		written[id] = true
	}
	lost := slices.DeleteFunc(slices.Clone(jobs), func(j *job) bool { return written[j.id] })
	halted, err := haltRecorded(ctx, tx, kept, byID)
	if err != nil {
		return nil, err
	}
	var ledger ledgerColumns
	marks := map[string]*heldPairs{}
	var ended heldPairs
	var recorded []*job
	rs := recordStates()
	for _, id := range kept {
		j := byID[id]
		if released[id] && !halted[id] {
			continue // released untouched: nothing happened to record
		}
		if s, ok := rs[j.state]; ok {
			if j.state == JobSkipped && j.appliedTwin {
				s.mark = markSkippedApplied
			}
			if marks[s.mark] == nil {
				marks[s.mark] = &heldPairs{}
			}
			marks[s.mark].add(j.requestID, dlq.Key{ID: j.deadLetterID, At: j.deadLetteredAt})
			if s.release {
				ended.add(j.requestID, dlq.Key{ID: j.deadLetterID, At: j.deadLetteredAt})
			}
		}
		if j.state == JobReplayed {
			ledger.add(j)
		}
		recorded = append(recorded, j)
	}
	if len(ledger.jobIDs) > 0 {
		l := &ledger
		if _, err := tx.Exec(ctx, insertLedger, l.jobIDs, l.reqIDs, l.dlIDs, l.tenants, l.classes, l.msgIDs, l.opIDs,
			l.subjects, l.streams, l.seqs, l.dups, l.dedupeKeys, l.operationKeys); err != nil {
			return nil, fmt.Errorf("record replay ledger: %w", err)
		}
	}
	untouched := map[int64]bool{} // dead letters their job's request no longer holds
	for _, sql := range []string{markReplayed, markSkippedApplied, markFailed, markNeedsReconciliation, markRequeued} {
		p := marks[sql]
		if p == nil {
			continue
		}
		changed, err := p.mark(ctx, tx, sql)
		if err != nil {
			return nil, fmt.Errorf("mark dead letters: %w", err)
		}
		for _, dl := range p.deadLetters {
			if !changed[dl] {
				untouched[dl] = true
			}
		}
	}
	if err := ended.release(ctx, tx); err != nil {
		return nil, fmt.Errorf("release ended replay items: %w", err)
	}
	// The requests' moves first (as they were made first), each with
	// the job that started it, its first attempt's time read back by
	// recordJobs.
	events := make([]audit.Event, 0, len(moved)+len(recorded))
	for _, r := range moved {
		events = append(events, w.runningEvent(r, started[r.ID]))
	}
	for _, j := range recorded {
		if j.deferredAgain() && !untouched[j.deadLetterID] {
			continue // its row, and the audit row of its deferral, say so already
		}
		e := w.itemEvent(j, untouched[j.deadLetterID])
		if untouched[j.deadLetterID] {
			w.log.Warn("replay result recorded; dead letter left as it is", "request", j.requestID, "dead_letter", j.deadLetterID,
				"tenant", j.tenant, "msg_id", j.msgID, "correlation_id", j.corrID, "state", j.state)
		}
		events = append(events, e)
	}
	if _, err := audit.AppendBatch(ctx, tx, events); err != nil {
		return nil, fmt.Errorf("audit replay results: %w", err)
	}
	return lost, nil
}

// heldPairs are (request, dead letter) pairs, one array per column (the
// dead letter's key is its id and time), for the statements that change a
// dead letter only while its request holds it.
type heldPairs struct {
	requests, deadLetters []int64
	ats                   []time.Time
}

func (p *heldPairs) add(request int64, k dlq.Key) {
	p.requests, p.deadLetters, p.ats = append(p.requests, request), append(p.deadLetters, k.ID), append(p.ats, k.At)
}

// release lets go of the pairs' dead letters (releaseEnded), one
// statement per request, in one round trip.
func (p *heldPairs) release(ctx context.Context, tx pgx.Tx) error {
	if len(p.requests) == 0 {
		return nil
	}
	byRequest := map[int64][]int64{}
	for i, r := range p.requests {
		byRequest[r] = append(byRequest[r], p.deadLetters[i])
	}
	var b pgx.Batch
	for _, r := range slices.Sorted(maps.Keys(byRequest)) {
		b.Queue(releaseEnded, r, byRequest[r])
	}
	return tx.SendBatch(ctx, &b).Close()
}

// mark runs sql (markReplayed, ...) on the pairs and returns the dead
// letters it changed.
func (p *heldPairs) mark(ctx context.Context, tx pgx.Tx, sql string) (map[int64]bool, error) {
	rows, err := tx.Query(ctx, sql, p.deadLetters, p.ats, p.requests)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	out := make(map[int64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// markHeld runs sql (markReplayed, ...) on the dead letters of request,
// each of which the request must hold in a status the statement changes:
// a conflict otherwise.
func markHeld(ctx context.Context, tx pgx.Tx, sql string, request int64, deadLetters []dlq.Key) error {
	if len(deadLetters) == 0 {
		return nil
	}
	var p heldPairs
	for _, k := range deadLetters {
		p.add(request, k)
	}
	changed, err := p.mark(ctx, tx, sql)
	if err != nil {
		return err
	}
	if len(changed) != len(deadLetters) {
		return quarantine.Errorf(quarantine.ECONFLICT, "%d dead letters of request %d are no longer held by it or changed status; reload and try again",
			len(deadLetters)-len(changed), request)
	}
	return nil
}

// deferredAgain says whether j is deferred again for what it was
// deferred for when claimed (the same check, and the same reason, which
// names it): nothing changed that an audit row would tell, only when it
// is read again (a late copy that stays behind is read again and again,
// ever less often: replaypolicy.Copy.BehindRecheck). A deferral for
// another reason, or after any other state, gets its row.
func (j *job) deferredAgain() bool {
	return j.state == JobDeferred && j.prevState == JobDeferred && j.result == j.prevResult && !j.deferred
}

// itemEvent is the audit row of what became of j, under its message id;
// untouched: the dead letter's status was left as it was.
func (w *Worker) itemEvent(j *job, untouched bool) audit.Event {
	after := map[string]any{"request": j.requestID, "job": j.id, "subject": j.subject, "stream": j.stream, "seq": j.seq, "duplicate": j.duplicate}
	j.publishedAfter(after)
	if untouched {
		after["dead_letter_unchanged"] = "the request no longer holds it, or its status moved on"
	}
	if j.notBefore != nil {
		after["until"] = j.notBefore.UTC().Format(time.RFC3339)
	}
	e := audit.Event{
		Actor: worker(w.cfg.Owner), Tenant: j.tenant, Action: "replay.item." + string(j.state),
		ObjectType: "dead_letter", ObjectID: strconv.FormatInt(j.deadLetterID, 10), MessageID: j.msgID,
		OperationID: j.opID, Reason: j.result, Outcome: audit.OutcomeOK, After: after,
	}
	switch j.state {
	case JobReplayed, JobSkipped, JobDeferred, JobCancelled:
	default:
		e.Outcome = audit.OutcomeError // blocked, suppressed, unknown, needs reconciliation: not what was asked
	}
	return e
}

// runningRequest is a request markRunning moved to running.
type runningRequest struct {
	ID     int64
	Tenant string
}

// runningEvent is the audit row of r's move from approved to running, by
// this worker, naming what started it: of jobs (r's jobs in the record a
// publish of which may have landed), the one first attempted (the
// earliest first_attempt_at known, then the lowest id).
func (w *Worker) runningEvent(r runningRequest, jobs []*job) audit.Event {
	first := slices.MinFunc(jobs, func(a, b *job) int {
		switch {
		case a.firstAttemptAt != nil && b.firstAttemptAt != nil:
			if c := a.firstAttemptAt.Compare(*b.firstAttemptAt); c != 0 {
				return c
			}
		case a.firstAttemptAt != nil:
			return -1
		case b.firstAttemptAt != nil:
			return 1
		}
		return cmp.Compare(a.id, b.id)
	})
	after := map[string]any{"status": StatusRunning, "job": first.id, "dead_letter": first.deadLetterID, "msg_id": first.msgID,
		"subject": first.subject, "outcome": first.state}
	if first.firstAttemptAt != nil {
		after["first_attempt_at"] = first.firstAttemptAt.UTC().Format(time.RFC3339Nano)
	}
	e := requestEvent(worker(w.cfg.Owner), quarantine.RequestMeta{}, audit.ActionReplayRunning, &Request{ID: r.ID, Tenant: r.Tenant})
	// The event, not a fault: a publish gate marked the job attempted and
	// no answer since said that the attempt did not land (mayHaveLanded),
	// which is all a move to running knows. Whether it was stored is the
	// item's own row's to say.
	e.Reason = fmt.Sprintf("started: its first publish attempt was of dead letter %d (job %d)", first.deadLetterID, first.id)
	e.Before, e.After = map[string]any{"status": StatusApproved}, after
	return e
}

// worker is who the audit log names for what a replay worker does.
func worker(owner string) quarantine.Actor {
	return quarantine.Actor{Subject: "replay-worker:" + owner}
}

// finish ends, as actor, the requests of ids that have no job left to
// run (finishRequests), in a transaction of its own that locks them first.
func (s *Service) finish(ctx context.Context, ids []int64, actor quarantine.Actor) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockRequests, ids); err != nil {
			return fmt.Errorf("lock replay requests: %w", err)
		}
		done, err := finishRequests(ctx, tx, ids, actor)
		if err != nil {
			return err
		}
		_, err = audit.AppendBatch(ctx, tx, done)
		return err
	})
}

// Requests that may have been left running with nothing to run (a worker
// recorded its jobs and could not finish them before its lease ended).
const selectIdle = `SELECT r.id FROM replay_requests r WHERE r.status IN ('approved', 'running')
    AND NOT EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = r.id AND j.state IN ('pending', 'claimed', 'deferred', 'unknown'))
    ORDER BY r.id LIMIT 1000`

// FinishIdle ends the requests approved or running with nothing left to
// run; the sweeper calls it, so that no request stays "running" after a
// worker lost its database while finishing. It returns how many it ended.
func (s *Service) FinishIdle(ctx context.Context) (int, error) {
	rows, err := s.pool.Query(ctx, selectIdle)
	if err != nil {
		return 0, fmt.Errorf("find idle replay requests: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	if err := s.finish(ctx, ids, sweeper()); err != nil {
		return 0, fmt.Errorf("finish idle replay requests: %w", err)
	}
	return len(ids), nil
}

// The requests of ids with no job left to run: one probe of
// replay_jobs_request_idx each, so a record in the middle of a large
// request does not count its jobs.
const selectFinished = `SELECT r.id FROM unnest($1::bigint[]) AS r(id)
    WHERE NOT EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = r.id AND j.state IN ('pending', 'claimed', 'deferred', 'unknown'))`

// finishRequests ends each of ids that has no job left to run, as the rules
// count its items (JudgeRequestOutcome): done when every item was replayed
// or skipped, done_with_problems otherwise, the counts in its status
// reason. The caller holds the requests' locks. It returns the audit rows.
func finishRequests(ctx context.Context, tx pgx.Tx, ids []int64, actor quarantine.Actor) ([]audit.Event, error) {
	rows, err := tx.Query(ctx, selectFinished, ids)
	if err != nil {
		return nil, fmt.Errorf("find finished replay requests: %w", err)
	}
	if ids, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil || len(ids) == 0 {
		return nil, err
	}
	counts, err := outcomes(ctx, tx, ids)
	if err != nil {
		return nil, fmt.Errorf("count replay outcomes: %w", err)
	}
	var events []audit.Event
	for _, id := range ids {
		c := counts[id]
		v := judgeOutcome(c.Progress)
		if v.status == "" {
			continue
		}
		tag, err := tx.Exec(ctx, finishRequest, id, v.status, v.reason)
		if err != nil {
			return nil, fmt.Errorf("finish replay request %d: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			continue
		}
		e := requestEvent(actor, quarantine.RequestMeta{}, v.action, &Request{ID: id, Tenant: c.Tenant})
		e.Reason = v.reason
		if v.status == StatusDoneWithProblems {
			e.Outcome = audit.OutcomeError
		}
		events = append(events, e)
	}
	return events, nil
}

// ledgerColumns are ledger rows as one array per column, for unnest.
type ledgerColumns struct {
	jobIDs, reqIDs, dlIDs, seqs                        []int64
	tenants, classes, msgIDs, opIDs, subjects, streams []string
	dups, dedupeKeys, operationKeys                    []bool
}

func (l *ledgerColumns) add(j *job) {
	c := replaypolicy.Classing{Class: j.class, Union: j.union}
	l.dedupeKeys, l.operationKeys = append(l.dedupeKeys, c.Has(replaypolicy.Dedupe)), append(l.operationKeys, c.Has(replaypolicy.SameOperation))
	l.jobIDs, l.reqIDs, l.dlIDs = append(l.jobIDs, j.id), append(l.reqIDs, j.requestID), append(l.dlIDs, j.deadLetterID)
	l.tenants, l.classes, l.msgIDs = append(l.tenants, j.tenant), append(l.classes, string(j.class)), append(l.msgIDs, j.msgID)
	l.opIDs, l.subjects, l.streams = append(l.opIDs, j.opID), append(l.subjects, j.subject), append(l.streams, j.stream)
	l.seqs, l.dups = append(l.seqs, int64(j.seq)), append(l.dups, j.duplicate)
}
