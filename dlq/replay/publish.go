package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// The rate of a request is kept in PostgreSQL, not in a worker: just before
// publishing, a worker reserves the next slots of the request
// (replay_requests.rate_next, 1/rate apart and never before now, so nothing
// bursts to catch up after a pause or a restart), checks in the same
// statement that the request still publishes (a cancel or a stop is seen
// before every reservation), that it still holds each job (its fencing
// token, under a lease that has not run out) and that the job's request
// still holds its dead letter, that the request's policy version is still
// the active one and the rights of its people rest on what the claim judged
// them on (authorityStamp), and marks the jobs attempted
// (first_attempt_at: from here on a publish may have landed;
// first_published_at, once for good once the job was handed to the NATS
// client: a claim that never handed it undoes its gate's first one,
// job.unreserved; handed_at, until the claim's record
// says no publish of the job may have landed: job.nothingLanded), and commits
// (gateTx) before it publishes each job at its slot. The slots are
// reckoned from the database's clock as the statement runs
// (clock_timestamp()), and it
// returns that clock as it ends, which the worker reads as the time it
// receives the answer: now(), the transaction's start, lags by the gate's
// lock waits and round trips, and by different amounts at each gate, so
// that slots read against it put two publishes of a request closer than
// 1/rate on a loaded machine.
var gateJobs = `
WITH r AS (
    UPDATE replay_requests SET rate_next = greatest(rate_next, clock_timestamp()) + make_interval(secs => $2::float8 / rate)
    WHERE id = $1
      AND status IN ('approved', 'running') -- a cancelled or stopped request publishes nothing more
      AND ` + policyStillActive + ` -- nor one approved under a policy another process replaced since the claim
      AND ($6::text IS NULL OR ` + authorityStamp + ` = $6) -- nor one whose people's rights may have changed since the claim
      AND greatest(rate_next, clock_timestamp()) + make_interval(secs => ($2::float8 - 1) / rate) <= $3 -- every slot before the claim stops publishing
    RETURNING rate_next - make_interval(secs => $2::float8 / rate) AS first_slot
), m AS (
    UPDATE replay_jobs j SET first_attempt_at = coalesce(j.first_attempt_at, now()),
        -- the stream a first attempt is sent to, as the worker judged it by: a retry relies on that very stream's window
        first_stream = CASE WHEN j.first_attempt_at IS NULL THEN u.stream ELSE j.first_stream END,
        first_stream_created = CASE WHEN j.first_attempt_at IS NULL THEN u.created ELSE j.first_stream_created END,
        first_stream_window = CASE WHEN j.first_attempt_at IS NULL THEN u.dup ELSE j.first_stream_window END,
        -- and where that stream stores its next message: a retry stored as new past one it no longer holds may have been forgotten
        first_stream_next_seq = CASE WHEN j.first_attempt_at IS NULL THEN u.next_seq ELSE j.first_stream_next_seq END,
        first_published_at = coalesce(j.first_published_at, now()), -- never reset: what the broker keeps since may be ours
        -- may be handed to NATS from here on, committed before the send: a worker that dies after this leaves it set
        -- ("may have been sent"); the record clears it only for a job none of whose publishes may have landed (nothingLanded)
        handed_at = coalesce(j.handed_at, now())
    FROM r, unnest($4::bigint[], $5::bigint[], $7::text[], $8::timestamptz[], $9::interval[], $10::bigint[]) AS u(id, fence, stream, created, dup, next_seq)
    WHERE j.id = u.id
      AND j.fence = u.fence AND j.state = 'claimed' -- a worker whose lease was taken over publishes nothing
      AND j.lease_until > now() -- nor one whose lease ran out while it judged (before anyone took it over)
      AND (SELECT i.held FROM replay_items i WHERE i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id)
          -- nor a job whose request let go of its dead letter since the claim (one probe of the item's key per job: as a
          -- join, a plan on stale statistics walked every held item of the request for every job, holding the
          -- request's row, which records wait for, for minutes)
    RETURNING j.id, nullif(j.first_published_at, now()) AS published_before -- NULL: this is its first publish ever
)
SELECT r.first_slot, clock_timestamp(), m.id, m.published_before FROM r LEFT JOIN m ON true`

// policyStillActive holds of a request (replay_requests' row) whose
// policy version is the active one (or none is recorded): a worker judges
// by its own table, which was the active one when it claimed, but another
// process may activate another since, and a request is never published
// under rules that are no longer in force (replaypolicy.JudgeRun blocks it
// at the next claim).
var policyStillActive = `(policy_version = coalesce((SELECT p.version FROM replay_policy_active p), policy_version)
        AND NOT ` + policyReplaced + `)`

// policyReplaced holds of a request (replay_requests' row) whose version
// was made active again since its approval (a rollback, after another
// version replaced it): the change voided the approval, and the rollback
// does not revive it (replaypolicy.Run.PolicyReplaced). The approval
// recorded the activation it was given under (policy_activated_at,
// migration 0072); one approved without (before 0072, or by an older
// console during an upgrade) is judged by its time: another version
// activated after it, or its own made active again after it (a rollback:
// its own activated after it while another version is on record; an
// approval committed while another version's activation waited for its
// locks is caught so). A console clock behind the database's can only
// make that block one more. A first activation of the version a request
// was approved under replaces nothing.
var policyReplaced = policyReplacedOf("")

// policyReplacedOfR is policyReplaced of replay_requests r.
var policyReplacedOfR = policyReplacedOf("r.")

// policyReplacedOf is policyReplaced of the replay_requests row whose
// columns are named with prefix r ("" or "r.").
func policyReplacedOf(r string) string {
	return strings.ReplaceAll(`CASE WHEN {r}policy_activated_at IS NOT NULL
        THEN {r}policy_activated_at IS DISTINCT FROM (SELECT v.activated_at FROM replay_policy_versions v WHERE v.version = {r}policy_version)
        ELSE EXISTS (SELECT 1 FROM replay_policy_versions v WHERE v.version <> {r}policy_version AND v.activated_at > {r}approved_at)
            OR (EXISTS (SELECT 1 FROM replay_policy_versions o WHERE o.version <> {r}policy_version)
                AND coalesce((SELECT v.activated_at FROM replay_policy_versions v WHERE v.version = {r}policy_version) > {r}approved_at, false)) END`,
		"{r}", r)
}

// Whether a request still publishes between slots ($2: the stamp the
// claim judged its people's rights on, NULL when it checked none): its
// status, whether its policy is no longer the active one, and whether its
// people's rights may have changed (stopsPublishing); and why a gate let
// nothing through: that, or no slot left before the claim stops
// publishing.
var (
	selectStatus = `SELECT status, NOT ` + policyStillActive + `, coalesce(` + authorityStamp + ` <> $2, false)
        FROM replay_requests WHERE id = $1`
	selectGateRefusal = `SELECT status, NOT ` + policyStillActive + `, coalesce(` + authorityStamp + ` <> $2, false),
        greatest(rate_next, now()) + make_interval(secs => ($3::float8 - 1) / rate) > $4
        FROM replay_requests WHERE id = $1`
)

// Why a job is not published now, though its request still publishes:
// the next claim judges it again on the policy and the rights as they are.
const (
	releasedPolicy = "released: the active replay policy changed since the claim judged it"
	// the approval's expiry passed between the claim and the publish
	releasedExpired = "released: the approval expired since the claim judged it; the next claim judges the request again"
	releasedRights  = "released: the rights of the request's people changed since the claim judged them"
	// the claim came to the end of the part of its lease it publishes in,
	// or its worker stops
	releasedLease    = "released: the lease was running out"
	releasedStopping = "released: the worker is stopping"
)

// chunkSpan is how much publishing one reservation covers: at most this
// much time of slots (and always one job). At 50 messages per second and
// below, every publish has its own reservation.
const chunkSpan = 20 * time.Millisecond

// recheckAfter: a job whose turn (its wait for a slot, the owning
// service's answer, a pause) took longer than this since the request's
// status was last read reads it again before it is sent.
const recheckAfter = 5 * time.Millisecond

// gate is what one reservation gave: the first slot and the database's now
// (so the worker waits on its own clock for a time of the database's), and
// which jobs it may publish; held are the jobs the ledger, read again under
// their identities' locks, did not let go, with the rules' verdict.
type gate struct {
	firstSlot, dbNow time.Time
	received         time.Time
	marked           map[int64]bool
	firstPublished   map[int64]time.Time // of the marked jobs published before: their first publish ever
	held             map[int64]replaypolicy.Verdict
}

// identityLockSpaceSQL is the first key of the advisory locks a publish gate
// takes on identities (the two-key form: its keys never meet the one-key
// locks of the audit chain and the partition keeper).
const identityLockSpaceSQL = "1364347204" // 0x51524944, "QRID"

// lockIdentities takes, in a publish gate's transaction, the lock of each
// identity its jobs would publish ($1: the identities' keys, sorted, so
// that every gate takes them in one order), held until the gate commits:
// a gate of the same identity in another request waits for it, and then
// reads the ledger and the jobs in flight as this one left them. The
// locks are taken before the request's row and the jobs', by every gate;
// nothing else takes them, so they wait for nothing that waits for them.
const lockIdentities = `SELECT count(pg_advisory_xact_lock(` + identityLockSpaceSQL + `, k)) FROM unnest($1::int[]) AS k`

// identityKey is the advisory lock key of an identity (replaypolicy.Identity).
func identityKey(identity string) int32 {
	h := fnv.New32a()
	h.Write([]byte(identity))
	return int32(h.Sum32())
}

// guardIdentities locks the identities of chunk's jobs that have one and no
// publish of their own that may have landed (replaypolicy.GateKeys), reads
// the ledger of those jobs again (ledgerOf, in the gate's transaction) and
// returns the verdicts of those the rules do not let go now (JudgeGate):
// another worker published or replayed the identity since this claim
// judged the job.
func (w *Worker) guardIdentities(ctx context.Context, tx pgx.Tx, chunk []*job) (map[int64]replaypolicy.Verdict, error) {
	keys := map[int32]bool{}
	var guarded []*job
	for _, j := range chunk {
		ids := replaypolicy.GateKeys(j.facts(), j.tenant, j.subject, j.msgID, j.opID)
		for _, id := range ids {
			keys[identityKey(id)] = true
		}
		if len(ids) > 0 {
			guarded = append(guarded, j)
		}
	}
	if len(guarded) == 0 {
		return nil, nil
	}
	if _, err := tx.Exec(ctx, lockIdentities, slices.Sorted(maps.Keys(keys))); err != nil {
		return nil, fmt.Errorf("lock identities: %w", err)
	}
	ledgers := w.readLedgers(ctx, tx, guarded)
	held := map[int64]replaypolicy.Verdict{}
	for _, j := range guarded {
		if l := ledgers[j.id]; l.Unreadable != "" {
			return nil, fmt.Errorf("read the ledger: %s", l.Unreadable) // the transaction is aborted
		}
		if v := replaypolicy.JudgeGate(j.facts(), ledgers[j.id]); v.Outcome != replaypolicy.Go {
			held[j.id] = v
			j.appliedTwin = appliedTwin(v, ledgers[j.id])
		}
	}
	return held, nil
}

// now is the database's time now: the gate's clock_timestamp() as it
// answered, plus the time since on this process's monotonic clock.
func (g gate) now() time.Time {
	return g.dbNow.Add(time.Since(g.received))
}

// slot is when, on the worker's clock, the i-th job of the reservation goes.
func (g gate) slot(i int, interval time.Duration) time.Time {
	return g.received.Add(g.firstSlot.Sub(g.dbNow) + time.Duration(i)*interval)
}

// lockRequestForGate takes the lock gateJobs' UPDATE takes of the
// request's row, before it (see reserve).
const lockRequestForGate = `SELECT 1 FROM replay_requests WHERE id = $1 FOR NO KEY UPDATE`

// reserve runs the gate for chunk (jobs of one request), returning ok false
// when the request publishes nothing more or no slot is left before its
// publishBy.
func (w *Worker) reserve(ctx context.Context, chunk []*job) (gate, bool, error) {
	j := chunk[0]
	g := gate{marked: map[int64]bool{}, firstPublished: map[int64]time.Time{}}
	n := 0
	err := pgx.BeginTxFunc(ctx, w.svc.pool, gateTx, func(tx pgx.Tx) error {
		held, err := w.guardIdentities(ctx, tx, chunk)
		if err != nil {
			return err
		}
		g.held = held
		ids, fences := make([]int64, 0, len(chunk)), make([]int64, 0, len(chunk))
		streams, created, dups := make([]*string, 0, len(chunk)), make([]*time.Time, 0, len(chunk)), make([]*time.Duration, 0, len(chunk))
		nextSeqs := make([]*int64, 0, len(chunk))
		for _, c := range chunk {
			if _, no := held[c.id]; !no {
				ids, fences = append(ids, c.id), append(fences, c.fence)
				s, at := sentTo(c.window)
				var dup *time.Duration
				var next *int64
				if s != nil {
					dup = &c.window.Duplicates
					if n := c.window.NextSeq; n > 0 && n <= math.MaxInt64 {
						seq := int64(n)
						next = &seq
					}
				}
				streams, created, dups, nextSeqs = append(streams, s), append(created, at), append(dups, dup), append(nextSeqs, next)
			}
		}
		// The request's row first, in a statement of its own: gateJobs
		// judges the active policy and the people's rights (subqueries of
		// other tables) in its snapshot, and one that waited for the row
		// would judge them as they were before it waited: a policy
		// activated, or a person revoked, meanwhile would not stop the
		// publish (TestRevLock18GatePublishesUnderPolicyActivatedWhileItWaited,
		// TestRevLock18GatePublishesForRequesterRevokedWhileItWaited). Held,
		// the row does not change, and gateJobs reads the rest as it is.
		if _, err := tx.Exec(ctx, lockRequestForGate, j.requestID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, gateJobs, j.requestID, len(chunk), j.publishBy, ids, fences, j.stamp, streams, created, dups, nextSeqs)
		if err != nil {
			return err
		}
		var id *int64
		var published *time.Time
		_, err = pgx.ForEachRow(rows, []any{&g.firstSlot, &g.dbNow, &id, &published}, func() error {
			if n == 0 {
				g.received = time.Now() // the answer, not the query's start: the statement may have waited for locks
			}
			n++
			if id != nil {
				g.marked[*id] = true
				if published != nil {
					g.firstPublished[*id] = *published
				}
			}
			return nil
		})
		return err
	})
	if err != nil {
		return gate{}, false, fmt.Errorf("reserve publish slots of request %d: %w", j.requestID, err)
	}
	return g, n > 0, nil
}

// sentTo is the stream, and when it was created, that the gate records a
// first attempt as sent to (replay_jobs.first_stream): those of the window
// the job was judged by, nil when it names no stream or does not say when
// it was created (a retry of it is then judged by the clocks).
func sentTo(w replaypolicy.Window) (*string, *time.Time) {
	if w.Stream == "" || w.Created.IsZero() || w.Unreadable != "" {
		return nil, nil
	}
	return &w.Stream, &w.Created
}

// refused says what becomes of the unpublished jobs of a request whose
// gate let nothing through: cancelled when the request was (cancel or
// emergency stop), released otherwise (the policy or the people's rights
// changed since the claim, or no slot is left before the lease runs out).
func (w *Worker) refused(ctx context.Context, rest []*job) {
	j := rest[0]
	var status Status
	var late, policy, rights bool
	err := w.svc.pool.QueryRow(ctx, selectGateRefusal, j.requestID, j.stamp, 1, j.publishBy).Scan(&status, &policy, &rights, &late)
	switch state, why := stopsPublishing(err, status, policy, rights); {
	case state == JobCancelled:
		halted(rest)
	case state != "":
		settle(rest, state, why)
	case late:
		settle(rest, JobPending, "released: no publish slot is left before the lease runs out")
	default:
		settle(rest, JobPending, fmt.Sprintf("released: the request is %s", status))
	}
}

// halted ends every job of jobs, none published in this claim, after a
// cancel or an emergency stop of their request: cancelled, or, for one
// whose earlier publish may have landed, needs reconciliation
// (JudgeUnsent). A job the gate marked attempted for the first time is
// unmarked (nothing of it was sent).
func halted(jobs []*job) {
	v := replaypolicy.Verdict{Outcome: replaypolicy.Cancel, Check: replaypolicy.CheckCancelled, Reason: "cancelled before it was published"}
	for _, j := range jobs {
		j.unsent(v)
		j.resetAttempt = j.firstAttempt
	}
}

// settle gives every job of jobs state and result without publishing it; a
// job the gate marked attempted for the first time is unmarked (nothing of
// it was sent).
func settle(jobs []*job, state JobState, result string) {
	for _, j := range jobs {
		j.state, j.result = state, result
		j.resetAttempt = j.firstAttempt
	}
}

// inflight is a published job waiting for its PubAck, and the size of
// its message as the server counts it (headers and payload).
type inflight struct {
	j    *job
	fut  jetstream.PubAckFuture
	size int64
}

// publish sends the jobs the rules let go (no state yet), each request's
// at its rate on its own goroutine, to the original subject under the
// original message id, until until; then it reads every PubAck (at most
// Batch in flight) and lets the rules say what it means (judgeAcks).
func (w *Worker) publish(ctx context.Context, jobs []*job, until time.Time) {
	byRequest := map[int64][]*job{}
	var order []int64
	for _, j := range jobs {
		if j.state != "" {
			continue
		}
		if _, seen := byRequest[j.requestID]; !seen {
			order = append(order, j.requestID)
		}
		byRequest[j.requestID] = append(byRequest[j.requestID], j)
	}
	var mu sync.Mutex
	var pending []inflight
	var panicked *workerPanic // the first panic of a request's goroutine, panicked again here
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4) // requests published at once by one worker (each holds a connection while it reserves)
	for _, id := range order {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			defer func() {
				// A panic of this goroutine would end the process, which
				// runOnceGuarded, on the worker's own, never hears of.
				if v := recover(); v != nil {
					mu.Lock()
					if panicked == nil {
						panicked = asWorkerPanic(v)
					}
					mu.Unlock()
				}
			}()
			out := w.publishRequest(ctx, byRequest[id], until)
			mu.Lock()
			pending = append(pending, out...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked) // the claim ends as a crash ends it: the PubAcks on their way are not read
	}
	w.judgeAcks(ctx, pending)
}

// publishRequest publishes the jobs of one request at its rate: a
// reservation per chunk (chunkSpan of slots), each job at its slot, and
// right before each send the status read again when the job's turn (its
// wait for the slot, the owning service's answer, a pause) took more than
// recheckAfter since it was last read, and a job whose slot passed by more
// than half an interval (at least chunkSpan) reserved again, so that
// neither a stop nor the rate waits on anything slow, and a stalled worker
// never sends a burst; a retry whose slot comes when the window no longer
// covers its first attempt is not sent (JudgeWindow, at its slot: a person
// decides); and the part of the lease the claim publishes in (until) is
// checked last, after the status read, which may wait on the database
// longer than a slow rate's lateness tolerance (50 s at MinRate) and the
// lease's end.
func (w *Worker) publishRequest(ctx context.Context, jobs []*job, until time.Time) []inflight {
	var out []inflight
	var hand inHand // a panic while a job is published is that job's
	defer hand.blame()
	answers := map[int64]answer{} // the owning services' answers right before a send, kept for the job's next slot
	interval := time.Duration(float64(time.Second) / jobs[0].rate)
	tolerance := max(interval/2, chunkSpan)
	most := max(1, int(jobs[0].rate*chunkSpan.Seconds()))
	// size is this reservation's: at most most, and no more than the
	// worker sent in time of the last one that fell behind (then growing
	// back), so that a worker slower than the rate does not reserve, and
	// mark attempted again, jobs it cannot send in their slots.
	size := most
	started := false // a job of the request was sent in this claim: its approval's expiry no longer counts
	for len(jobs) > 0 {
		if time.Now().After(until) {
			settle(jobs, JobPending, releasedLease)
			return out
		}
		if why := w.approvalHolds(jobs[0], started); why != "" {
			settle(jobs, JobPending, why) // before the gate marks anything attempted
			return out
		}
		hand.j = nil
		chunk := jobs[:min(size, len(jobs))]
		g, ok, err := w.reserve(ctx, chunk)
		switch {
		case err != nil:
			w.log.Warn("replay: no publish slot", "request", jobs[0].requestID, "err", err)
			settle(jobs, JobPending, "released: "+err.Error())
			return out
		case !ok:
			w.refused(ctx, jobs)
			return out
		}
		for _, c := range chunk {
			if g.marked[c.id] {
				// The claim read first_attempt_at, and only this claim's
				// gates set it since: none then means this is the first
				// attempt. Set for every job the gate marked, so that one
				// this loop never reaches (a stop, a refusal) is unmarked.
				c.firstAttempt = c.firstAttemptAt == nil
				c.firstPublishedAt = g.firstPublished[c.id]
				c.reservedFirst = c.firstPublishedAt.IsZero()
				c.dbNow = g.now
			}
		}
		sent := 0
		read := g.received // when the request's status was last read: the gate read it
		// halts reads the request's status again when more than
		// recheckAfter passed since it was last read and since turn
		// began, and ends jobs[sent:] when the request no longer
		// publishes, saying so. The jobs of one reservation follow each
		// other without it: the rest of the reservation may land after a
		// stop.
		halts := func(j *job, turn time.Time) bool {
			if time.Since(later(read, turn)) <= recheckAfter {
				return false
			}
			read = time.Now()
			switch state, why := w.stillPublishes(ctx, j); state {
			case "":
				return false
			case JobCancelled:
				halted(jobs[sent:])
			default:
				settle(jobs[sent:], state, why)
			}
			return true
		}
	chunk:
		for i, j := range chunk {
			hand.j = j
			if v, ok := g.held[j.id]; ok {
				j.unsent(v) // the identity was published or replayed by another job since the claim judged this one
				j.appliedTwin = j.appliedTwin && j.state == JobSkipped
				sent++
				continue
			}
			if !g.marked[j.id] {
				j.state, j.result = JobPending, "released: this claim no longer holds it (lease, fence or item)" // the record keeps nothing
				sent++
				continue
			}
			turn, at := time.Now(), g.slot(i, interval)
			if wait := time.Until(at); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					settle(jobs[sent:], JobPending, releasedStopping)
					return out
				}
				if halts(j, turn) { // stopped while it waited: no owning service is asked
					return out
				}
			} else if -wait > tolerance {
				break chunk // late: reserve a fresh slot rather than catch up
			}
			w.freshRetryWindow(ctx, j, g)
			if w.retryPastWindow(j, g) { // not even the owning service is asked
				sent++
				continue
			}
			if (replaypolicy.Classing{Class: j.class, Union: j.union}).Has(replaypolicy.Revalidate) {
				// The owning service is asked again right before the send:
				// its answer to the claim's judge may be up to two thirds
				// of a lease old, and a principal's authority it revoked
				// since must stop the publish.
				a, kept := answers[j.id]
				if !kept || time.Since(a.at) > a.serves {
					var cut string
					if a, cut = w.askBeforeSend(ctx, j, until, tolerance); cut != "" {
						settle(jobs[sent:], JobPending, cut)
						return out
					}
					answers[j.id] = a
					if halts(j, turn) { // a stop while the service was asked ends the job cancelled, whatever it answered
						return out
					}
				}
				f := j.facts()
				f.Revalidation = a.revalidation
				if v := replaypolicy.JudgeRevalidation(f); v.Outcome != replaypolicy.Go {
					j.unsent(v)
					j.resetAttempt = j.firstAttempt // the gate marked it; nothing was sent
					sent++
					continue
				}
			}
			// A retry's window is read again here, before the checks
			// below (the status among them), which a stop that came while
			// it was read must meet; it is judged by the time as it
			// leaves, after them, with no read between (retryPastWindow).
			w.freshRetryWindow(ctx, j, g)
			if w.beforeSend != nil {
				w.beforeSend(j.id, until)
			}
			if ctx.Err() != nil {
				settle(jobs[sent:], JobPending, releasedStopping)
				return out
			}
			if w.rightsLapsed(j) {
				// A person's yes rested on the provider's word, which has
				// grown older than the authority takes it since the claim
				// asked: the next claim asks again.
				settle(jobs[sent:], JobPending, releasedRights)
				return out
			}
			if why := w.approvalHolds(j, started); why != "" {
				// The approval expired (or the policy changed) since the
				// claim judged the request; the wait for the slot may have
				// taken it past.
				settle(jobs[sent:], JobPending, why)
				return out
			}
			if !time.Now().Before(until) {
				// The gate saw the lease live, but the wait for the slot
				// (or a pause of this process) took the claim past the
				// part of its lease it publishes in: another worker may
				// have taken the job over. until is on this process's
				// monotonic clock, so no clock of another host moves it.
				settle(jobs[sent:], JobPending, releasedLease)
				return out
			}
			// What the turn did since the checks above (the owning
			// service's answer, a pause) may have outlasted a stop or the
			// slot: the status is read again after more than
			// recheckAfter, and a job late for its slot reserves a fresh
			// one (its answer kept) rather than send with those after it.
			if halts(j, turn) {
				return out
			}
			if time.Since(at) > tolerance {
				break chunk // late: a fresh slot, as above
			}
			if !time.Now().Before(until) {
				// The status read just above may have waited (a lock, a
				// slow database) past the part of the lease the claim
				// publishes in, and the tolerance does not catch it at a
				// slow rate: at MinRate it is 50 s, longer than the whole
				// lease. Released, as above.
				settle(jobs[sent:], JobPending, releasedLease)
				return out
			}
			if w.retryPastWindow(j, g) {
				// Again as it leaves: the owning service's answer and the
				// status read since the check above may have taken up to
				// the lateness tolerance (5 s at 0.1 a second), more than
				// the window's margin.
				sent++
				continue
			}
			if w.leaving != nil {
				w.leaving(j.id)
			}
			if p, ok := w.send(j); ok {
				out = append(out, p)
				started = true
			}
			sent++
		}
		if sent < len(chunk) {
			size = max(1, sent)
		} else {
			size = min(most, 2*size)
		}
		jobs = jobs[sent:]
	}
	return out
}

// retryPastWindow decides j and reports true when j is a retry after an
// unknown outcome that the window no longer covers: a retry goes only
// while the window still covers the first attempt when it leaves, not
// only when the claim judged it, since its slot may come later and past
// the window the broker stores it again. The first attempt's time is the
// database's (a gate's now()), so this is judged on the database's clock
// as the gate g read it, moved on by this process's monotonic clock: a
// console host whose clock lags would retry past it. It is judged by the
// window freshRetryWindow read last, and reads nothing itself: nothing
// slow comes between the checks before a send and the send.
func (w *Worker) retryPastWindow(j *job, g gate) bool {
	if j.firstAttempt {
		return false
	}
	v := replaypolicy.JudgeWindow(j.attempt(w.svc.cfg.WindowMargin), g.now())
	if v.Outcome == replaypolicy.Go {
		return false
	}
	j.decide(v)
	return true
}

// freshRetryWindow reads the window of j, a retry, afresh (jobWindow; the
// late copies too when the window says it needs them, as the claim's
// judge reads them), for retryPastWindow. The window the claim's judge
// read is not enough: an operator who lowers a stream's duplicate window
// makes the server forget at once the ids it no longer covers, and a
// retry sent on the judge's longer window would be stored again (a second
// effect). Retries are rare, so one STREAM.INFO each (two per send) costs
// little. (TestRev37WindowLoweredBeforeARetryLeaves)
func (w *Worker) freshRetryWindow(ctx context.Context, j *job, g gate) {
	if j.firstAttempt {
		return
	}
	ctx = context.WithoutCancel(ctx) // a stop meanwhile is the checks' to see: this read says what the window is
	j.window = w.jobWindow(ctx, j)
	if v := replaypolicy.JudgeWindow(j.attempt(w.svc.cfg.WindowMargin), g.now()); v.Needs == replaypolicy.NeedCopies {
		j.window = w.svc.cfg.Windows.LateCopies(ctx, j.attempt(w.svc.cfg.WindowMargin))
	}
}

// answer is what the owning service answered right before a send, and
// for how long after it came it serves a send: a job late for its slot
// once the answer came reserves a fresh slot, and is sent there on the
// same answer when the slot comes within that time.
type answer struct {
	revalidation *replaypolicy.Revalidation
	at           time.Time
	serves       time.Duration
}

// askBeforeSend asks the owning service of j, a revalidate item, right
// before its send, within the part of the claim's lease it publishes in.
// The answer serves for as long as it took to come (a service's yes may
// be that old when it comes), at least tolerance: a job late by more
// than tolerance gets a fresh slot sooner than that after its answer when
// no other worker holds the request's next slots, so a slow service does
// not keep a job asking and reserving again for good. cut is why the
// question was cut short (the worker stops, or the claim's time ran out):
// that is not the service's answer. An answer that came is the answer,
// even when the deadline passed as it came (the checks before the send
// see a stop or the end of the claim's time all the same).
func (w *Worker) askBeforeSend(ctx context.Context, j *job, until time.Time, tolerance time.Duration) (a answer, cut string) {
	rctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	asked := time.Now()
	rev := w.revalidate(rctx, j)
	if rev.Unanswered != "" && rctx.Err() != nil {
		return answer{}, releasedBy(rctx)
	}
	return answer{revalidation: rev, at: time.Now(), serves: max(tolerance, time.Since(asked))}, ""
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stillPublishes reads whether the request of j still publishes in j's
// turn (after a wait for its slot, or the owning service's answer): ""
// when it does, else what becomes of its unpublished jobs and why
// (cancelled after a cancel or a stop; released when the status cannot be
// read, nothing being sent on a guess, or when the policy or the people's
// rights changed since the claim judged them).
func (w *Worker) stillPublishes(ctx context.Context, j *job) (JobState, string) {
	var status Status
	var policy, rights bool
	err := w.svc.pool.QueryRow(ctx, selectStatus, j.requestID, j.stamp).Scan(&status, &policy, &rights)
	return stopsPublishing(err, status, policy, rights)
}

// stopsPublishing is what becomes of a request's unpublished jobs by what
// was read of it (err: it could not be), "" when it still publishes.
func stopsPublishing(err error, status Status, policy, rights bool) (JobState, string) {
	switch {
	case err != nil:
		return JobPending, "released: the request's status could not be read: " + err.Error()
	case status == StatusCancelled:
		return JobCancelled, "cancelled before it was published"
	case status != StatusApproved && status != StatusRunning:
		return JobPending, fmt.Sprintf("released: the request is %s", status)
	case policy:
		return JobPending, releasedPolicy
	case rights:
		return JobPending, releasedRights
	}
	return "", ""
}

// send publishes j asynchronously; a job it cannot send gets its state.
// It is sent expecting the stream of the window it was judged by (when
// that names one): any other stream the broker would store it in (an
// account subject mapping, a stream's subjects moved since) refuses it,
// so nothing lands where the subject's consumers do not read.
func (w *Worker) send(j *job) (inflight, bool) {
	var edited string
	if j.edited {
		edited = hex.EncodeToString(j.approvedSHA256)
	}
	m, err := Message(j.subject, j.msgID, j.opID, j.corrID, j.deadLetterID, j.requestID, j.headers, j.payload, edited)
	if err != nil {
		j.state, j.result, j.resetAttempt = JobBlocked, err.Error(), j.firstAttempt
		return inflight{}, false
	}
	if nc := w.js.Conn(); nc != nil && !nc.IsConnected() {
		// A client reconnecting keeps what it is handed (unless its
		// connection has no reconnect buffer, as the console's) and sends
		// it when it is back, perhaps after the duplicate window: the
		// broker would store it again. Nothing is handed to it.
		w.decideAck(context.Background(), nil, j, nil, errNotSent{fmt.Errorf("the NATS connection is %s", nc.Status())})
		return inflight{}, false
	}
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(j.msgID)}
	if j.window.Stream != "" {
		opts = append(opts, jetstream.WithExpectStream(j.window.Stream))
	}
	j.handed = true
	fut, err := w.pub.PublishMsgAsync(m, opts...)
	if err != nil {
		w.decideAck(context.Background(), nil, j, nil, errNotSent{err}) // it never left the worker
		return inflight{}, false
	}
	return inflight{j: j, fut: fut, size: dlq.WireSize(m)}, true
}

// judgeAcks waits for the PubAcks of pending (AckTimeout after the last
// publish at most) and decides each job by what its answer means. A
// worker that is stopping waits for them too (as record records): a
// PubAck on its way would otherwise leave its job unknown.
func (w *Worker) judgeAcks(ctx context.Context, pending []inflight) {
	ctx = context.WithoutCancel(ctx)
	wait, cancel := context.WithTimeout(ctx, w.cfg.AckTimeout)
	defer cancel()
	var hand inHand // a panic while an answer is judged is its job's
	defer hand.blame()
	var limit serverLimit   // what the server takes now, learnt once a connection it closed for size lost an answer
	reads := claimStreams{} // the answering streams, each read once for the claim
	type answered struct {
		ack *jetstream.PubAck
		err error
	}
	answers := make([]answered, len(pending))
	unanswered := func(a answered) bool { return a.ack == nil && errors.Is(a.err, context.DeadlineExceeded) }
	silent := false // a publish had no answer at all
	for i, p := range pending {
		hand.j = p.j
		ack, err := pubAck(wait, p.fut)
		if w.ack != nil {
			ack, err = w.ack(p.j.id, ack, err)
		}
		if ack == nil && lostAnswer(err) {
			err = limit.explained(w.js.Conn(), p.size, err)
		}
		answers[i] = answered{ack, err}
		silent = silent || unanswered(answers[i])
	}
	var reset string
	if silent {
		reset = w.unstick()
	}
	for i, p := range pending {
		if a := answers[i].ack; a != nil && answers[i].err == nil && !a.Duplicate {
			reads.answered(a.Stream, p.j.subject, p.j.msgID, a.Sequence) // read back for one another's subject (storedUnder)
		}
	}
	for i, p := range pending {
		hand.j = p.j
		ack, err := answers[i].ack, answers[i].err
		if reset != "" && unanswered(answers[i]) {
			err = fmt.Errorf("%w; %s", err, reset)
		}
		w.decideAck(ctx, reads, p.j, ack, err)
	}
}

// pingWait is how long unstick waits for the server's answer to a ping:
// on a connection that works it comes in a round trip, and the wait comes
// after AckTimeout, inside the claim's lease (at most a sixth of it, as
// AckTimeout is).
const pingWait = time.Second

// socketReset is a NATS connection's dialer that can close the socket it
// dialed at once, dropping what the kernel has not delivered
// (app.NATSResetOnClose).
type socketReset interface{ Reset() }

// unstick makes sure that the publishes of a claim that had no answer
// are not still on their way when their jobs are recorded unknown, and
// says what it did ("" when the connection answered). A retry is sent
// under the same message id while the duplicate window covers the first
// attempt, on the understanding that the first attempt landed by then or
// never will. A connection whose path to the server stalled still holds
// the first attempt (in the kernel's send buffer), looks connected, and
// NATS notices it only after minutes of pings; when the path heals it
// delivers it, and if another worker's retry was stored meanwhile and its
// window has passed, the broker stores the same message a second time.
// So a ping goes first, on the same connection: the server it is
// connected to answers it after reading everything written before it, the
// publishes included. When no answer comes within pingWait the socket is
// reset through the connection's dialer (socketReset: SO_LINGER 0, so the
// kernel drops what it has not delivered instead of sending it later),
// and NATS reconnects. The ping and the reset do not wait on the NATS
// client's lock, which a write blocked on the stalled path holds for up
// to its FlusherTimeout (a minute): that would outlast the claim's lease,
// and another worker would retry while the publish is still in this
// socket. Only then are the jobs recorded and a retry possible. A
// connection dialed otherwise is asked to reconnect (its close may still
// send what it holds), and a warning says so.
//
// What the ping proves is the hop to the server the console is connected
// to: in a NATS cluster that server may still hold the publish on its way
// to the stream's leader (a route that stalled), which no client can see
// (docs/replay.md). (TestRev37StalledConnectionsPublishIsDroppedBeforeARetry)
func (w *Worker) unstick() string {
	nc := w.js.Conn()
	if nc == nil {
		return ""
	}
	wait := min(pingWait, w.cfg.AckTimeout)
	answered := make(chan bool, 1)
	go func() { answered <- !nc.IsConnected() || nc.FlushTimeout(wait) == nil }() // closed or reconnecting: its socket is closed already
	select {
	case ok := <-answered:
		if ok {
			return ""
		}
	case <-time.After(2 * wait):
	}
	if d, ok := nc.Opts.CustomDialer.(socketReset); ok {
		w.log.Warn("replay worker: the NATS connection answered neither the PubAcks of a claim nor a ping; its socket is reset so that nothing it holds reaches the broker after a retry")
		d.Reset()
		return "the connection answered no ping either and was reset, dropping what it had not delivered"
	}
	w.log.Warn("replay worker: the NATS connection answered neither the PubAcks of a claim nor a ping, and was not dialed so that it can be reset (app.NATSResetOnClose): it is asked to reconnect, and what it holds may still reach the broker")
	go func() { _ = nc.ForceReconnect() }()
	return "the connection answered no ping either and was asked to reconnect"
}

// pubAck is the broker's answer to fut (a PubAck, or the error it
// answered), or context.DeadlineExceeded when none came before wait
// ended. An answer that came is taken even after wait ended: once one
// PubAck is late, wait has ended for every job after it, and a select
// with both ready picks one at random, which judged about half of the
// answers that had come as lost.
func pubAck(wait context.Context, fut jetstream.PubAckFuture) (*jetstream.PubAck, error) {
	select {
	case ack := <-fut.Ok():
		return ack, nil
	case err := <-fut.Err():
		return nil, err
	case <-wait.Done():
	}
	select {
	case ack := <-fut.Ok():
		return ack, nil
	case err := <-fut.Err():
		return nil, err
	default:
		return nil, context.DeadlineExceeded
	}
}

// decideAck has the rules say what the broker's answer (ack, or err when
// none came) means for j, reading back the message the broker kept when
// it answered Duplicate; reads are the streams the claim read so far
// (claimStreams; nil for a job that was not sent).
func (w *Worker) decideAck(ctx context.Context, reads claimStreams, j *job, ack *jetstream.PubAck, err error) {
	a := replaypolicy.Ack{MsgID: j.msgID, Subject: j.subject, FirstAttempt: j.firstAttempt, Deferrals: j.deferrals, DeferredBy: j.deferredBy, Window: j.window,
		Margin: w.svc.cfg.WindowMargin, RetryBase: w.cfg.Retry, Attempts: j.attempts, Jitter: rand.Float64(),
		FirstPublishedAt: j.firstPublishedAt, ApprovedSHA256: hex.EncodeToString(j.approvedSHA256), OriginalSHA256: hex.EncodeToString(j.originalSHA256),
		DeadLetteredAt: j.deadLetteredBy()}
	if j.earlierHandedAt != nil {
		a.EarlierReplayAt = *j.earlierHandedAt
	}
	if j.itemHandedAt != nil {
		a.EarlierItemReplayAt = *j.itemHandedAt
	}
	now := w.ackJudgedAt(j)
	if j.firstAttemptAt != nil {
		a.FirstAttemptAt, a.FirstSentTo = *j.firstAttemptAt, j.firstSentTo
	} else {
		a.FirstAttemptAt = now
	}
	refused, notSent := publishError(err)
	if refused != "" && j.firstAttempt && notExpected(err) { // a retry refused needs a person whatever the cause (JudgeAck)
		refused, notSent = w.expectedElsewhere(ctx, j, refused)
	}
	var unsent errNotSent
	switch {
	case refused != "":
		a.Refused = refused
	case notSent != "":
		a.NotSent = notSent
	case errors.As(err, &unsent):
		a.NotSent = unsent.err.Error()
	case errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders):
		// Nobody took the publish, so nothing was stored. That is for good
		// only when no stream stores the subject: a stream electing a
		// leader (a node of its cluster went down) answers no one for a
		// few seconds, and its items are sent again later. The window
		// reader says which stream stores it (its answer kept a while, so
		// a whole failover's publishes ask once).
		win := w.window(ctx, j.subject)
		if win.Stream == "" && win.Unreadable == "" && w.svc.cfg.Windows != nil {
			// The list is kept a while: a stream made since it was read
			// (still electing its leader) is not in it. "No stream" blocks
			// the item for good, so it is asked afresh first.
			win = w.svc.cfg.Windows.Fresh(ctx, j.subject)
		}
		switch {
		case win.Unreadable != "":
			a.NotSent = "no stream answered the publish, and whether one stores the subject could not be read: " + win.Unreadable
		case win.Stream != "":
			a.NotSent = fmt.Sprintf("stream %s stores the subject but did not answer the publish (electing a leader?)", win.Stream)
		default:
			a.NoStream = true
		}
	case err != nil || ack == nil:
		a.Lost = fmt.Sprint(err)
	default:
		a.Stream, a.Seq, a.Duplicate = ack.Stream, ack.Sequence, ack.Duplicate
		if a.Window.Stream == "" {
			// The claim's list named no stream for the subject, so the
			// publish expected none: only the stream that stores it now
			// (one made since the list was read) may have answered
			// (JudgeAck). Rare (a publish where no stream stores the
			// subject finds no responders), so one read per such answer.
			a.Window = w.answeredWindow(ctx, j.subject, ack.Stream)
		}
		if ack.Duplicate {
			a.Kept = w.kept(ctx, reads, j, ack.Stream, ack.Sequence)
		}
	}
	w.rereadWindow(ctx, reads, j, &a) // a retry, or a first attempt stored as new: the stream as it is now
	v := replaypolicy.JudgeAck(a, now)
	j.decide(v)
	j.stream, j.seq = a.Stream, a.Seq
	switch v.Outcome {
	case replaypolicy.Replayed:
		j.duplicate = a.Duplicate
	case replaypolicy.Defer, replaypolicy.Suppressed:
		j.deferred, j.resetAttempt = true, true // the broker kept a message not ours: this attempt did not land
		j.deferralCounts, j.deferredBy = a.CountsDeferral(), replaypolicy.KeptKey(a.Stream, a.Seq)
	case replaypolicy.Fail, replaypolicy.Wait:
		j.resetAttempt = j.firstAttempt // nothing of this attempt was stored
	case replaypolicy.Reconcile:
		// The message itself kept, sent again outside the console: this
		// attempt was dropped for it and did not land (nothingLanded).
		j.resetAttempt = v.Check == replaypolicy.CheckSentAgain
	}
}

// ackJudgedAt is the time the broker's answer to j is judged at: the
// later of the console's clock and the database's, as the gate that
// marked j attempted read it, moved on by this process's monotonic clock
// (gate.now: the publish comes after the gate, the answer later still).
// A retry's earlier publish is dated by the database (first_attempt_at),
// and every check before the retry leaves reads the window on the
// database's clock (retryPastWindow); judged on a console clock behind
// it, a retry the broker stored again past the window would look covered
// by it and be shown replayed (retryForgotten). The later of the two only
// ever hands such a retry to a person sooner, and puts the times the job
// waits until (which the claim compares with the database's now()) no
// earlier. (TestRev39RetryStoredPastTheWindowNeedsAPersonWhateverTheConsoleClock)
func (w *Worker) ackJudgedAt(j *job) time.Time {
	now := w.svc.cfg.Now()
	if j.dbNow != nil {
		now = later(now, j.dbNow())
	}
	return now
}

// errNotSent is an error PublishMsgAsync returned at once: the message
// never left the worker.
type errNotSent struct{ err error }

func (e errNotSent) Error() string { return e.err.Error() }
func (e errNotSent) Unwrap() error { return e.err }

// kept reads back the message the broker kept under j's message id (seq of
// stream): whether it carries this item's Dlq-Replay-Of and this request's
// Dlq-Replay-Request, or any Dlq-Replay-Of, its payload's hash, when and under which subject it
// was stored, and the subject the stream stores a publish to j's subject
// under (storesAs); whether it is ours is the rules' to say: OursKept.
// The stream is read once per claim (reads, claimStreams).
func (w *Worker) kept(ctx context.Context, reads claimStreams, j *job, stream string, seq uint64) replaypolicy.Kept {
	st, err := reads.stream(ctx, w.js, stream)
	if err != nil {
		return replaypolicy.Kept{Unreadable: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := st.GetMsg(ctx, seq)
	if err != nil {
		return replaypolicy.Kept{Unreadable: err.Error()}
	}
	of := m.Header.Get(HeaderReplayOf)
	replayed := of != ""
	sameItem := of == strconv.FormatInt(j.deadLetterID, 10)
	request := m.Header.Get(HeaderReplayRequest)
	tagged := sameItem && request == strconv.FormatInt(j.requestID, 10)
	if _, err := strconv.ParseInt(request, 10, 64); err != nil {
		request = "" // named in a reason only as a request id
	}
	sameRequest := request == strconv.FormatInt(j.requestID, 10)
	fromOrigin := j.replayOf != nil && j.originRequest != nil &&
		of == strconv.FormatInt(*j.replayOf, 10) && request == strconv.FormatInt(*j.originRequest, 10)
	if _, err := strconv.ParseInt(of, 10, 64); err != nil {
		of = "" // named in a reason only as a dead letter's id
	}
	sum := sha256.Sum256(m.Data)
	return replaypolicy.Kept{Tagged: tagged, SameItem: sameItem, Request: request, Replay: replayed, Of: of, SameRequest: sameRequest, FromOrigin: fromOrigin,
		PayloadSHA256: hex.EncodeToString(sum[:]), StoredAt: m.Time,
		Subject: m.Subject, StoresAs: storesAs(st.CachedInfo().Config.SubjectTransform, j.subject)}
}

// storesAs is the subject a stream of subject transform tr (nil: none)
// stores a publish to subject under, as the broker applies it: the
// transform's destination when its source matches the subject, the
// subject itself otherwise; "" when the transform cannot be built (the
// broker's own code builds it, so nothing is guessed). A transform the
// broker's code builds as none (an empty destination, say: it returns nil
// and no error) transforms nothing there either.
func storesAs(tr *jetstream.SubjectTransformConfig, subject string) string {
	if tr == nil {
		return subject
	}
	t, err := server.NewSubjectTransform(tr.Source, tr.Destination)
	if err != nil {
		return ""
	}
	if t == nil {
		return subject
	}
	if to, err := t.Match(subject); err == nil {
		return to
	}
	return subject // the broker leaves a subject the transform does not match as it is
}
