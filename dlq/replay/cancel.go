package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

const (
	// The jobs of a request that may still publish, locked, with what
	// JudgeUnsent judges of them: whether a publish of them may have landed
	// (first_attempt_at: set before every publish, cleared when an answer
	// said it did not land) and whether a worker holds them under a live
	// lease.
	selectHaltable = `SELECT j.id, j.dead_letter_id, j.dead_lettered_at, j.state, j.first_attempt_at IS NOT NULL,
            j.state = 'claimed' AND j.lease_until >= now(), i.msg_id, i.operation_id
        FROM replay_jobs j JOIN replay_items i ON i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id
        WHERE j.request_id = $1 AND j.state IN ('pending', 'claimed', 'deferred', 'unknown') -- replayed ones stay replayed
        ORDER BY j.id FOR UPDATE OF j`
	// What becomes of each, as judged; a job that moved since it was read
	// (none can: it is locked) is not touched.
	haltJobs = `UPDATE replay_jobs j SET state = u.state, result = u.result, updated_at = now(), lease_owner = '', lease_until = NULL
        FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS u(id, prev, state, result)
        WHERE j.id = u.id AND j.state = u.prev -- only as it was judged
        RETURNING j.id`
	// A closed request lets go of its dead letters, but those of jobs a
	// worker holds (released when it records them) and those a person must
	// settle (released when they do).
	// It returns the dead letters it let go, each of which the log then
	// tells of (setStatus).
	releaseItems = `UPDATE replay_items i SET held = false WHERE i.request_id = $1 AND i.held
        AND NOT EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = $1 AND j.dead_letter_id = i.dead_letter_id
                        AND j.state IN ('claimed', 'needs_reconciliation'))
        RETURNING i.dead_letter_id`
	// A person who rejects or cancels a request is named on it (the sweeper
	// and the workers end requests as nobody).
	setRequestStatus = `UPDATE replay_requests SET status = $2, status_reason = $3, version = version + 1,
        finished_at = CASE WHEN $2 IN ('done', 'rejected', 'cancelled', 'void') THEN now() ELSE finished_at END,
        closed_by_issuer = CASE WHEN $2 IN ('rejected', 'cancelled') THEN $4 ELSE closed_by_issuer END,
        closed_by_subject = CASE WHEN $2 IN ('rejected', 'cancelled') THEN $5 ELSE closed_by_subject END,
        closed_by_email = CASE WHEN $2 IN ('rejected', 'cancelled') THEN $6 ELSE closed_by_email END,
        closed_by_email_verified = CASE WHEN $2 IN ('rejected', 'cancelled') THEN $7 ELSE closed_by_email_verified END
        WHERE id = $1`
	// Drafts and requests waiting for approval: the ones a new policy can void.
	selectUnapproved = `SELECT ` + requestColumns + ` FROM replay_requests WHERE status IN ('draft', 'pending_approval') ORDER BY id FOR UPDATE`
	// Drafts older than their time to live, a batch at a time; one a submit
	// holds is left to it.
	selectExpiredDrafts = `SELECT ` + requestColumns + ` FROM replay_requests WHERE status = 'draft' AND created_at <= $1
        ORDER BY created_at LIMIT 1000 FOR UPDATE SKIP LOCKED`
)

// What a closed request did not publish goes back to quarantine (the
// counters follow: dlq.StatusMove); a job a worker holds is left to it, and
// so is one a person must settle.
var requeueItems = dlq.StatusMove(`
    SELECT d.id, d.dead_lettered_at, d.status
    FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
    WHERE i.request_id = $1 AND i.held -- only what this request holds
      AND d.status = 'replay_requested'
      AND NOT EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = $1 AND j.dead_letter_id = d.id
                      AND j.state IN ('claimed', 'needs_reconciliation'))
    ORDER BY d.id, d.dead_lettered_at -- by key, as Close and Submit take them
    FOR UPDATE OF d`, `'quarantined'`, "id")

// Cancel stops the requester's own request: nothing not yet published will
// be. Workers check the request before every publish. Anyone else is
// refused (forbidden, audited as denied).
func (s *Service) Cancel(ctx context.Context, id int64, actor quarantine.Actor, reason string, meta quarantine.RequestMeta) error {
	var denied string // the tenant of a request the actor may not cancel
	tctx, jctx, cancel := judging(ctx)
	defer cancel()
	err := dlq.InTx(tctx, s.pool, func(tx pgx.Tx) error {
		denied = "" // a run again starts afresh
		req, err := getRequest(jctx, tx, id, true)
		if err != nil {
			return err
		}
		if v := replaypolicy.MayCancel(req.Requester, actor); v.Outcome != replaypolicy.Go {
			denied = req.Tenant
			return quarantine.Errorf(quarantine.EFORBIDDEN, "%s", v.Reason)
		}
		if err := ctx.Err(); err != nil {
			return err // judged, and not refused: a client that left changes nothing
		}
		if !req.Status.Open() {
			return quarantine.Errorf(quarantine.ECONFLICT, "the request is already %s", req.Status)
		}
		if err := seen(ctx, tx, actor); err != nil { // before the jobs and the audit chain
			return err
		}
		return s.halt(ctx, tx, &req, "cancelled by the requester", strings.TrimSpace(reason), actor, meta, "replay.cancel")
	})
	if denied != "" {
		err = s.auditDenied(ctx, actor, meta, "replay.cancel", denied, id, err)
	}
	if err != nil {
		return fmt.Errorf("cancel replay %d: %w", id, err)
	}
	return nil
}

// halt ends an open request that may have jobs: each job not yet
// published is cancelled (why: result), and each whose publish may have
// landed needs a person and keeps its dead letter (JudgeUnsent); a job a
// worker holds is left to it (it checks the request before it publishes).
// Each job's end is audited, and the request is cancelled with reason,
// audited as action. It takes the jobs, then the dead letters and the
// counters, and appends to the audit chain last: a worker recording takes
// them in that order too.
func (s *Service) halt(ctx context.Context, tx pgx.Tx, req *Request, result, reason string, actor quarantine.Actor, meta quarantine.RequestMeta, action string) error {
	rows, err := tx.Query(ctx, selectHaltable, req.ID)
	if err != nil {
		return err
	}
	type haltable struct {
		id            int64
		deadLetter    dlq.Key
		u             replaypolicy.Unsent
		msgID, operID string // the item's, which its audit row names
	}
	hs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (haltable, error) {
		var h haltable
		return h, r.Scan(&h.id, &h.deadLetter.ID, &h.deadLetter.At, &h.u.State, &h.u.Attempted, &h.u.LeaseLive, &h.msgID, &h.operID)
	})
	if err != nil {
		return err
	}
	cancel := replaypolicy.Verdict{Outcome: replaypolicy.Cancel, Check: replaypolicy.CheckCancelled, Reason: result}
	var ids []int64
	var prevs, states, results []string
	var unsettled []dlq.Key
	byID := map[int64]haltable{}
	for _, h := range hs {
		v := replaypolicy.JudgeUnsent(cancel, h.u)
		state := jobStateFor(v.Outcome)
		if state == JobPending {
			continue // a worker holds it
		}
		ids, prevs, states, results = append(ids, h.id), append(prevs, h.u.State), append(states, string(state)), append(results, v.Reason)
		if state == JobNeedsReconciliation {
			unsettled = append(unsettled, h.deadLetter)
		}
		byID[h.id] = h
	}
	var events []audit.Event
	if len(ids) > 0 {
		rows, err := tx.Query(ctx, haltJobs, ids, prevs, states, results)
		if err != nil {
			return err
		}
		done, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(done) != len(ids) {
			return quarantine.Errorf(quarantine.ECONFLICT, "%d jobs of request %d changed while it was halted; try again", len(ids)-len(done), req.ID)
		}
		if err := markHeld(ctx, tx, markNeedsReconciliation, req.ID, unsettled); err != nil {
			return err
		}
		events = make([]audit.Event, 0, len(ids))
		for i, id := range ids {
			e := requestEvent(actor, meta, audit.ReplayItemPrefix+states[i], req)
			h := byID[id]
			e.ObjectType, e.ObjectID, e.MessageID, e.OperationID, e.Reason = "dead_letter", fmt.Sprint(h.deadLetter.ID), h.msgID, h.operID, results[i]
			e.After = map[string]any{"request": req.ID, "job": id, "was": prevs[i]}
			if states[i] != string(JobCancelled) {
				e.Outcome = audit.OutcomeError
			}
			events = append(events, e)
		}
	}
	released, err := release(ctx, tx, req.ID)
	if err != nil {
		return err
	}
	for _, h := range byID {
		delete(released, h.deadLetter.ID) // its job's row above says how it ended
	}
	if _, err := audit.AppendBatch(ctx, tx, events); err != nil {
		return err
	}
	return s.setStatus(ctx, tx, req, StatusCancelled, reason, actor, meta, action, released)
}

// close ends a request and returns its unpublished dead letters to
// quarantined, each audited (setStatus).
func (s *Service) close(ctx context.Context, tx pgx.Tx, req *Request, to Status, reason string, actor quarantine.Actor, meta quarantine.RequestMeta, action string) error {
	released, err := release(ctx, tx, req.ID)
	if err != nil {
		return err
	}
	return s.setStatus(ctx, tx, req, to, reason, actor, meta, action, released)
}

// release returns the unpublished dead letters of request id, which is
// ending, to quarantined and lets go of them (requeueItems, releaseItems).
// It returns the dead letters it let go, by id.
func release(ctx context.Context, tx pgx.Tx, id int64) (map[int64]bool, error) {
	if _, err := tx.Exec(ctx, requeueItems, id); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, releaseItems, id)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	released := make(map[int64]bool, len(ids))
	for _, id := range ids {
		released[id] = true
	}
	return released, nil
}

// releasedAction is the action of the row under each dead letter a
// request that ends as to let go: the request was rejected, cancelled
// (by its requester, or stopped) or voided.
func releasedAction(to Status) string {
	if to == StatusVoid {
		return audit.ReplayItemPrefix + "voided"
	}
	return audit.ReplayItemPrefix + string(to) // rejected, cancelled
}

// setStatus moves req to status to, audited as action with reason, with
// one row (releasedAction) per dead letter of released, which the request
// let go as it ended without a row of its own (nil or empty: none):
// otherwise a dead letter's trail, and the message-id filter, would end at
// its request (or an approval) although it is back in quarantine.
func (s *Service) setStatus(ctx context.Context, tx pgx.Tx, req *Request, to Status, reason string, actor quarantine.Actor, meta quarantine.RequestMeta, action string,
	released map[int64]bool) error {
	if _, err := tx.Exec(ctx, setRequestStatus, req.ID, to, reason, actor.Issuer, actor.Subject, actor.Email, actor.EmailVerified); err != nil {
		return err
	}
	e := requestEvent(actor, meta, action, req)
	e.Reason = reason
	e.Before, e.After = map[string]any{"status": req.Status}, map[string]any{"status": to}
	req.Status, req.StatusReason = to, reason
	if to == StatusRejected || to == StatusCancelled {
		req.ClosedBy = actor
	}
	if len(released) == 0 {
		return auditItems(ctx, tx, req.ID, e, "", nil)
	}
	return auditItems(ctx, tx, req.ID, e, releasedAction(to), released)
}

// ExpireDrafts voids the drafts older than the draft time to live (none
// when it is 0), a thousand at a time, each audited; it returns how many.
// Drafts hold no dead letter, so nothing else changes. Their age is judged
// by the database's clock, which dated them: a sweeper whose clock runs
// ahead would void fresh drafts (TestRevClock18FastSweeperVoidsFreshDrafts).
func (s *Service) ExpireDrafts(ctx context.Context) (int, error) {
	if s.cfg.DraftTTL <= 0 {
		return 0, nil
	}
	now, err := dbNow(ctx, s.pool)
	if err != nil {
		return 0, fmt.Errorf("expire replay drafts: %w", err)
	}
	n, err := s.voidEach(ctx, "replay.draft_expired", nil, func(r Request) string {
		if v := replaypolicy.JudgeDraftAge(r.CreatedAt, now, s.cfg.DraftTTL); v.Outcome != replaypolicy.Go {
			return v.Reason
		}
		return ""
	}, selectExpiredDrafts, now.Add(-s.cfg.DraftTTL))
	if err != nil {
		return 0, fmt.Errorf("expire replay drafts: %w", err)
	}
	return n, nil
}

// VoidStale voids drafts and requests waiting for approval made under
// another version than the active one (PolicyStanding.Voids): their
// approvals no longer count. A process whose own table is not the active
// version voids nothing made under the active one. The active version is
// read in the transaction that voids, under the lock an activation takes
// (lockPolicyRead), so none commits in between and turns the requests it
// voids into ones made under the active version. It returns how many it
// voided.
func (s *Service) VoidStale(ctx context.Context) (int, error) {
	var st PolicyStanding
	n, err := s.voidEach(ctx, "replay.void", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockPolicyRead); err != nil {
			return err
		}
		active, err := activePolicy(ctx, tx)
		st = PolicyStanding{Table: s.cfg.Policy(), Active: active}
		if err == nil && s.afterStaleRead != nil {
			s.afterStaleRead()
		}
		return err
	}, func(r Request) string {
		if st.Voids(r.PolicyVersion) {
			return "the replay policy changed since this request was made; request again"
		}
		return ""
	}, selectUnapproved)
	if err != nil {
		return 0, fmt.Errorf("void stale replay requests: %w", err)
	}
	return n, nil
}

// voidEach voids, in one transaction and audited as action by the console
// itself, each request query (with args) selects and locks for which why
// gives a reason; it returns how many. first (nil: nothing) runs at the
// start of the transaction, before query, each time it runs.
func (s *Service) voidEach(ctx context.Context, action string, first func(pgx.Tx) error, why func(Request) string, query string, args ...any) (int, error) {
	n, _, err := s.eachLockedAfter(ctx, first, func(tx pgx.Tx, r *Request) (bool, error) {
		reason := why(*r)
		if reason == "" {
			return false, nil
		}
		return true, s.close(ctx, tx, r, StatusVoid, reason, sweeper(), quarantine.RequestMeta{}, action)
	}, query, args...)
	return n, err
}

// eachLocked runs act, in one transaction, on each request query (with
// args) selects and locks; it returns on how many act acted, and the
// requests it passed over (in query's order). act must touch nothing
// outside the database: the transaction runs again when it lost a lock
// race (dlq.InTx).
func (s *Service) eachLocked(ctx context.Context, act func(pgx.Tx, *Request) (bool, error), query string, args ...any) (int, []Request, error) {
	return s.eachLockedAfter(ctx, nil, act, query, args...)
}

// eachLockedAfter is eachLocked with first (nil: nothing) run at the
// start of the transaction, before query, each time it runs.
func (s *Service) eachLockedAfter(ctx context.Context, first func(pgx.Tx) error, act func(pgx.Tx, *Request) (bool, error), query string, args ...any) (int, []Request, error) {
	n := 0
	var passed []Request
	err := dlq.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		n, passed = 0, nil // a run again starts afresh
		if first != nil {
			if err := first(tx); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		reqs, err := pgx.CollectRows(rows, scanRequest)
		if err != nil {
			return err
		}
		for i := range reqs {
			acted, err := act(tx, &reqs[i])
			if err != nil {
				return err
			}
			if acted {
				n++
			} else {
				passed = append(passed, reqs[i])
			}
		}
		return nil
	})
	return n, passed, err
}

// sweeper is who the audit log names for what the console does by itself
// to replay requests.
func sweeper() quarantine.Actor { return quarantine.Actor{Subject: "replay-sweeper"} }

// selectHalted are the requests of $1 that were cancelled or stopped. The
// record reads them after it wrote its jobs, in a statement of its own: a
// cancel that committed while the record waited for a job's lock (halt
// locks the jobs a worker holds, and leaves them to it) is seen, and one
// that comes later waits for the record's locks and halts what it wrote.
const selectHalted = `SELECT id FROM replay_requests WHERE id = ANY($1) AND status = 'cancelled'`

// heldAs says what the worker did with j in the claim the record ends:
// "published it" only when this claim handed its message to NATS
// (handed), "held it" when it released the job unsent.
func heldAs(j *job) string {
	if j.handed {
		return "published it"
	}
	return "held it"
}

// haltRecorded ends, in the record's transaction tx, the jobs of kept
// (recorded, by id in byID) that the record left waiting (pending,
// deferred, unknown) under a request that was cancelled or stopped while
// a worker held them: halt left them to the worker, and the worker's
// answer is not the end of them. Each is judged as halt judges a job no
// worker holds (JudgeUnsent of a cancel): cancelled, and its dead letter
// goes back to quarantine, or, when a publish of it may have landed,
// needs reconciliation and keeps it; its result names what the broker
// said. The caller marks the dead letters, lets go of them and audits
// each job as it records them. It returns the jobs it ended.
func haltRecorded(ctx context.Context, tx pgx.Tx, kept []int64, byID map[int64]*job) (map[int64]bool, error) {
	var requests []int64
	for _, id := range kept {
		if j := byID[id]; j.state.Running() && !slices.Contains(requests, j.requestID) {
			requests = append(requests, j.requestID)
		}
	}
	if len(requests) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, selectHalted, requests)
	if err != nil {
		return nil, fmt.Errorf("read cancelled replay requests: %w", err)
	}
	cancelled, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(cancelled) == 0 {
		return nil, err
	}
	var ids []int64
	var prevs, states, results []string
	halted := map[int64]bool{}
	for _, id := range kept {
		j := byID[id]
		if !j.state.Running() || !slices.Contains(cancelled, j.requestID) {
			continue
		}
		cancel := replaypolicy.Verdict{Outcome: replaypolicy.Cancel, Check: replaypolicy.CheckCancelled,
			Reason: "cancelled: its request was cancelled or stopped while a worker " + heldAs(j) + " (" + j.result + ")"}
		v := replaypolicy.JudgeUnsent(cancel, replaypolicy.Unsent{State: string(j.state), Attempted: j.mayHaveLanded()})
		ids, prevs = append(ids, j.id), append(prevs, string(j.state))
		j.notBefore = nil
		j.decide(v)
		j.storable()
		states, results = append(states, string(j.state)), append(results, j.result)
		halted[j.id] = true
	}
	rows, err = tx.Query(ctx, haltJobs, ids, prevs, states, results)
	if err != nil {
		return nil, fmt.Errorf("halt replay jobs of cancelled requests: %w", err)
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("halt replay jobs of cancelled requests: %w", err)
	}
	if len(done) != len(ids) {
		return nil, fmt.Errorf("halt replay jobs of cancelled requests: %d of %d changed in the record's own transaction", len(ids)-len(done), len(ids))
	}
	return halted, nil
}
