package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// StopInput is an emergency stop: why, and the typed
// replaypolicy.StopPhrase.
type StopInput struct {
	Reason string
	Typed  string
}

// What an emergency stop of a tenant ends: every request that may still
// publish or be approved; drafts, which a submit a minute after the stop
// would run; and requests done with problems whose items wait for a
// person, where a republish would run them again. Stopped, the last may
// still be settled as applied or not applied, never republished
// (JudgeReconcile). Of those done with problems, only the ones whose items
// could ever be republished are stopped (mayEverRepublishSQL, the SQL of
// Request.MayEverRepublish): the others can only be settled applied or
// not applied anyway. That is decided on what the request recorded, in
// the query and before any limit, so the list, CanStop, Stop and StopAll
// agree, and a later policy version cannot make a request a stop skipped
// republishable again.
var stoppable = `(status IN ('draft', 'pending_approval', 'approved', 'running')
    OR (status = 'done_with_problems' AND ` + mayEverRepublishSQL() + ` AND EXISTS (SELECT 1 FROM replay_jobs j
        WHERE j.request_id = replay_requests.id AND j.state = 'needs_reconciliation')))`

// mayEverRepublishSQL is Request.MayEverRepublish over the columns of
// replay_requests: the approvals it recorded, its class and its classes
// do not reach replaypolicy.TwoApproverFloor. The classes are the
// package's own constants, never input.
func mayEverRepublishSQL() string {
	least, classes := replaypolicy.TwoApproverFloor()
	quoted := make([]string, len(classes))
	for i, c := range classes {
		quoted[i] = "'" + string(c) + "'"
	}
	two := "ARRAY[" + strings.Join(quoted, ", ") + "]::text[]"
	return fmt.Sprintf("(approvals_needed < %d AND class <> ALL (%s) AND NOT (classes && %s))", least, two, two)
}

// The requests an emergency stop of a tenant ends, locked.
var selectStoppable = `SELECT ` + requestColumns + ` FROM replay_requests
    WHERE tenant = $1 AND ` + stoppable + ` ORDER BY id FOR UPDATE`

// lockMaybeStoppable locks, before selectStoppable judges them, every
// request of a tenant a stop may end, by status alone: a condition the
// database checks again on a row that changed while the statement waited
// for it. stoppable's EXISTS over the jobs would be read in the
// statement's snapshot, so a request that ended done with problems,
// an item waiting for a person, while the stop waited was judged on its
// new row and its old jobs and dropped without a word
// (TestRevReplay18bTenantStopMissesRequestThatEndsWithProblemsMeanwhile).
// Locked first, selectStoppable, a statement of its own, reads the jobs as
// they are: those of a request done with problems change only under its
// row's lock (Reconcile), and a running request is stopped on its status.
const lockMaybeStoppable = `SELECT id FROM replay_requests
    WHERE tenant = $1 AND status IN ('draft', 'pending_approval', 'approved', 'running', 'done_with_problems')
    ORDER BY id FOR UPDATE`

// The requests of tenants that a stop would end, the newest first, for
// the emergency stop page.
var selectStoppableIn = `SELECT ` + requestColumns + ` FROM replay_requests
    WHERE tenant = ANY($1) AND ` + stoppable + ` ORDER BY id DESC LIMIT 200`

// Whether request $1 is one a stop of one request ends: one a stop of its
// tenant ends, but a draft (its requester drops it) or one waiting for
// approval (an approver rejects it, its requester cancels it: it
// publishes nothing until then, and a stop of its tenant ends it too).
var selectStoppableOne = `SELECT EXISTS (SELECT 1 FROM replay_requests
    WHERE id = $1 AND status NOT IN ('draft', 'pending_approval') AND ` + stoppable + `)`

// Stoppable returns the requests of tenants that an emergency stop would
// end (at most 200, the newest first).
func (s *Service) Stoppable(ctx context.Context, tenants []string) ([]Request, error) {
	rows, err := s.pool.Query(ctx, selectStoppableIn, tenants)
	if err != nil {
		return nil, fmt.Errorf("read stoppable replays: %w", err)
	}
	reqs, err := pgx.CollectRows(rows, scanRequest)
	if err != nil {
		return nil, fmt.Errorf("read stoppable replays: %w", err)
	}
	return reqs, nil
}

// CanStop reports whether Stop would end request id as it is now (the
// request page offers the stop where it does): approved or running, or
// done with problems with items waiting for a person that could ever be
// republished (Request.MayEverRepublish).
func (s *Service) CanStop(ctx context.Context, id int64) (bool, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, selectStoppableOne, id).Scan(&ok); err != nil {
		return false, fmt.Errorf("read whether replay %d may be stopped: %w", id, err)
	}
	return ok, nil
}

// MayEverRepublish says whether an item of r that needs reconciliation
// could be republished under some policy (replaypolicy.MayEverRepublish of
// replaypolicy.RecordedApprovals): not when r needed two approvers by what
// it recorded or by its classes' floor. Only facts fixed at submit, unlike
// Service.MayRepublish, which also reads the policy now (a new version may
// raise a class's approvals, a rollback lower them again): a request done
// with problems a stop would change (stoppable), and the pages' "may still
// republish", are decided on this one.
func (r Request) MayEverRepublish() bool {
	return replaypolicy.MayEverRepublish(replaypolicy.RecordedApprovals(r.Class, r.Classes, r.ApprovalsNeeded))
}

// Stop ends request id at once, whoever requested it: an emergency stop by
// an approver or an admin of its tenant (the route checks who; the rules
// ask for a reason and the typed phrase, invalid without). Nothing not yet
// published will be; a job whose outcome is unknown waits for a person
// (needs_reconciliation), who may no longer republish it. It returns a
// conflict for a request CanStop says no of: one that is not open and has
// nothing waiting for a person, or nothing a person may republish (done
// with problems, of items that needed two approvers), a draft (it
// publishes nothing; its requester drops it) or one waiting for approval
// (rejected or cancelled instead).
func (s *Service) Stop(ctx context.Context, id int64, actor quarantine.Actor, in StopInput, meta quarantine.RequestMeta) error {
	if v := replaypolicy.JudgeStop(in.Reason, in.Typed); v.Outcome != replaypolicy.Go {
		return fmt.Errorf("stop replay %d: %w", id, refuse(v, quarantine.EINVALID))
	}
	err := dlq.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		req, err := getRequest(ctx, tx, id, true)
		if err != nil {
			return err
		}
		var ok bool
		if err := tx.QueryRow(ctx, selectStoppableOne, id).Scan(&ok); err != nil {
			return err
		}
		if ok {
			return s.stop(ctx, tx, &req, actor, in.Reason, meta)
		}
		switch req.Status {
		case StatusDoneWithProblems:
			var waiting int
			if err := tx.QueryRow(ctx, countWaitingForPerson, id).Scan(&waiting); err != nil {
				return err
			}
			return quarantine.Errorf(quarantine.ECONFLICT, "%s", nothingToStop(waiting, req.MayEverRepublish()))
		case StatusPendingApproval:
			return quarantine.Errorf(quarantine.ECONFLICT, "the request waits for approval and publishes nothing until then: an approver rejects it, its requester cancels it")
		}
		return quarantine.Errorf(quarantine.ECONFLICT, "the request is %s: there is nothing to stop", strings.ReplaceAll(string(req.Status), "_", " "))
	})
	if err != nil {
		return fmt.Errorf("stop replay %d: %w", id, err)
	}
	return nil
}

// countWaitingForPerson counts the items of request $1 that need
// reconciliation, for the words of a stop it refuses.
const countWaitingForPerson = `SELECT count(*) FROM replay_jobs WHERE request_id = $1 AND state = 'needs_reconciliation'`

// nothingToStop is why a stop of a request done with problems changes
// nothing, naming only what it has: waiting items that need
// reconciliation, which a stop would not change (mayRepublish false: the
// request needed two approvers, so they can only be settled applied or
// not applied), or none.
func nothingToStop(waiting int, mayRepublish bool) string {
	switch {
	case waiting == 0:
		return "nothing to stop: the request publishes nothing more, and none of its items waits for a person"
	case mayRepublish: // an item came to need reconciliation after Stop's query read none
		return "nothing to stop when the request was read, but an item of it has since come to wait for a person: try the stop again"
	case waiting == 1:
		return "nothing to stop: the request publishes nothing more, and its item that needs reconciliation can only be settled applied or not applied (the request needed two approvers)"
	}
	return fmt.Sprintf("nothing to stop: the request publishes nothing more, and its %d items that need reconciliation can only be settled applied or not applied (the request needed two approvers)", waiting)
}

// TenantStop is what an emergency stop of a tenant did: how many requests
// it stopped, and the ones it left as they were because the person may not
// stop their class (in id order).
type TenantStop struct {
	Stopped int
	Left    []Request
}

// LeftClasses are the classes of the requests the stop left, each once,
// in order.
func (t TenantStop) LeftClasses() []replaypolicy.Class {
	var out []replaypolicy.Class
	for _, r := range t.Left {
		if !slices.Contains(out, r.Class) {
			out = append(out, r.Class)
		}
	}
	slices.Sort(out)
	return out
}

// StopAll ends every request of tenant that may still publish or be
// approved, every draft (so no submit right after the stop runs one) and
// every request done with problems with items waiting for a person that
// could ever be republished (so no republish runs it again:
// Request.MayEverRepublish), of the
// classes may allows (the person's stop right, class by class), as Stop
// does each; it says how many it stopped and which it left (a partial
// stop is not a stop of the tenant). A request a stop would not change is
// neither stopped nor left.
func (s *Service) StopAll(ctx context.Context, tenant string, may func(replaypolicy.Class) bool, actor quarantine.Actor, in StopInput,
	meta quarantine.RequestMeta) (TenantStop, error) {
	if v := replaypolicy.JudgeStop(in.Reason, in.Typed); v.Outcome != replaypolicy.Go {
		return TenantStop{}, fmt.Errorf("stop replays of %s: %w", tenant, refuse(v, quarantine.EINVALID))
	}
	var res TenantStop
	var err error
	lockFirst := func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, lockMaybeStoppable, tenant)
		return err
	}
	res.Stopped, res.Left, err = s.eachLockedAfter(ctx, lockFirst, func(tx pgx.Tx, r *Request) (bool, error) {
		if !may(r.Class) {
			return false, nil
		}
		return true, s.stop(ctx, tx, r, actor, in.Reason, meta)
	}, selectStoppable, tenant)
	if err != nil {
		return TenantStop{}, fmt.Errorf("stop replays of %s: %w", tenant, err)
	}
	return res, nil
}

// stop halts req as an emergency stop by actor. The request's reason does
// not name actor: the request records who closed it, and every page shows
// "Cancelled by" that person before the reason; each item's result, shown
// on its own, does.
func (s *Service) stop(ctx context.Context, tx pgx.Tx, req *Request, actor quarantine.Actor, reason string, meta quarantine.RequestMeta) error {
	return s.halt(ctx, tx, req, "stopped by "+actor.Attribution(), "emergency stop: "+strings.TrimSpace(reason), actor, meta, "replay.stop")
}
