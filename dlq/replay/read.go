package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// querier runs queries: *pgxpool.Pool and pgx.Tx both are one.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const (
	// A request is read with its requester as the directory has them now
	// (joinRequesterNow, peopleInto): every judgement of it compares
	// its people both ways (replaypolicy.MayBeOne), whichever action reads
	// it. Locked, only the request's row is (the directory's is read), by
	// lockRequest first, in a statement of its own: a statement that waits
	// for the lock reads everything else as it was when it began, and the
	// action holding the lock may add to the request's people meanwhile
	// (an approval: replay_request_approvers, and with it the links
	// knownAsColumn follows from them). Read after the lock is held, they
	// are as the last action on the request left them.
	selectRequest = `SELECT ` + requestColumns + `, ` + peopleColumns + ` FROM replay_requests r ` + joinRequesterNow + ` WHERE r.id = $1`
	lockRequest   = `SELECT id FROM replay_requests WHERE id = $1 FOR UPDATE` // the action's checks and writes see no concurrent change
	selectBatch   = `SELECT ` + requestColumns + `, ` + peopleColumns + ` FROM replay_requests r ` + joinRequesterNow + `
        WHERE r.batch = $1 ORDER BY r.id`
	// A request never submitted (a draft, or one voided or cancelled
	// before it was submitted) is its requester's own business; the dead
	// letter's page lists only what was submitted. Each with its
	// requester as the directory has them now (joinRequesterNow: who may
	// settle an item, as Reconcile judges it).
	selectRequestsFor = `SELECT ` + requestColumns + `, ` + peopleColumns + ` FROM replay_requests r ` + joinRequesterNow + `
        WHERE id IN (SELECT request_id FROM replay_items WHERE dead_letter_id = $1) AND submitted_at IS NOT NULL
        ORDER BY id DESC LIMIT 20`
	selectItems = `SELECT ` + itemColumns + `, ` + outcomeColumns + ` FROM replay_items i
        LEFT JOIN replay_jobs j ON j.request_id = i.request_id AND j.dead_letter_id = i.dead_letter_id
        WHERE i.request_id = $1 ORDER BY i.position LIMIT $2`
	// Live items are the ones not skipped when the selection was frozen.
	selectLiveItems = `SELECT ` + itemColumns + ` FROM replay_items i WHERE i.request_id = $1 AND i.skip_reason = '' ORDER BY i.position`
	// Each approval with its approver as the directory has them now
	// (approverNow; by the directory's key).
	selectApprovals = `SELECT a.approver_issuer, a.approver_subject, a.approver_email, a.approver_email_verified, a.intent_hash, a.approved_at,
            a.voided_at, a.void_reason, ` + approverNow + `
        FROM replay_approvals a ` + joinApproverNow + ` WHERE a.request_id = $1 ORDER BY a.approved_at`
	// The payload an item sends: the edited one, else the dead letter's.
	selectItemPayload = `SELECT coalesce(i.payload, d.payload), i.msg_id, i.operation_id, d.id IS NULL AND i.payload IS NULL FROM replay_items i
        LEFT JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
        WHERE i.request_id = $1 AND i.dead_letter_id = $2 AND i.skip_reason = ''`
)

// getRequest reads request id (locked: FOR UPDATE of its row, taken
// before it is read, lockRequest), with its requester as the directory
// has them now (Request.RequesterNow) and its people (Request.KnownAs).
func getRequest(ctx context.Context, q querier, id int64, lock bool) (Request, error) {
	if lock {
		var locked int64
		if err := q.QueryRow(ctx, lockRequest, id).Scan(&locked); errors.Is(err, pgx.ErrNoRows) {
			return Request{}, fmt.Errorf("replay request %d: %w", id, errNoRequest)
		} else if err != nil {
			return Request{}, err
		}
	}
	rows, err := q.Query(ctx, selectRequest, id)
	if err != nil {
		return Request{}, err
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRequestNow)
	if errors.Is(err, pgx.ErrNoRows) {
		return Request{}, fmt.Errorf("replay request %d: %w", id, errNoRequest)
	}
	return r, err
}

// Request returns replay request id, or not_found.
func (s *Service) Request(ctx context.Context, id int64) (Request, error) {
	return getRequest(ctx, s.pool, id, false)
}

// Batch returns the requests made from one selection, or not_found.
func (s *Service) Batch(ctx context.Context, batch string) ([]Request, error) {
	out, err := batchRequests(ctx, s.pool, selectBatch, batch)
	if err != nil {
		return nil, fmt.Errorf("read replay batch: %w", err)
	}
	return out, nil
}

func batchRequests(ctx context.Context, q querier, sql, batch string) ([]Request, error) {
	rows, err := q.Query(ctx, sql, batch)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, scanRequestNow)
	if err == nil && len(out) == 0 {
		return nil, fmt.Errorf("replay batch %q: %w", batch, errNoBatch)
	}
	return out, err
}

// QueueRequestsFor queues into b (a page's round trip) the read of the
// most recent requests that include dead letter deadLetterID (20, those
// never submitted left out), each with its requester as the directory has
// them now (Request.RequesterNow); *out holds them once b has run.
func (s *Service) QueueRequestsFor(b *pgx.Batch, deadLetterID int64, out *[]Request) {
	b.Queue(selectRequestsFor, deadLetterID).Query(func(rows pgx.Rows) error {
		var err error
		*out, err = pgx.CollectRows(rows, scanRequestNow)
		return err
	})
}

// What became of one dead letter in each of the requests QueueRequestsFor
// reads (the latest 20 that were submitted).
const selectItemOf = `SELECT ` + itemColumns + `, ` + outcomeColumns + `, i.request_id FROM replay_items i
    JOIN replay_requests r ON r.id = i.request_id AND r.submitted_at IS NOT NULL
    LEFT JOIN replay_jobs j ON j.request_id = i.request_id AND j.dead_letter_id = i.dead_letter_id
    WHERE i.dead_letter_id = $1
    ORDER BY i.request_id DESC LIMIT 20`

// QueueItemOf queues into b (a page's round trip) the read of dead letter
// deadLetterID as an item of each of the requests QueueRequestsFor reads, with
// what became of it; *out holds them by request once b has run.
func (s *Service) QueueItemOf(b *pgx.Batch, deadLetterID int64, out *map[int64]Item) {
	b.Queue(selectItemOf, deadLetterID).Query(func(rows pgx.Rows) error {
		items := map[int64]Item{}
		_, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
			var req int64
			var it Item
			var until *time.Time
			if err := scanItemInto(row, &it, &it.Outcome, &it.OutcomeReason, &until, &it.Settled, &req); err != nil {
				return struct{}{}, err
			}
			it.setUntil(until)
			items[req] = it
			return struct{}{}, nil
		})
		*out = items
		return err
	})
}

// ItemDeadLetters returns the dead letter ids of every item of request id
// (left out ones too), in id order; none for no such request. The audit
// log's request filter finds its items' entries under them.
func (s *Service) ItemDeadLetters(ctx context.Context, id int64) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT dead_letter_id FROM replay_items WHERE request_id = $1 ORDER BY dead_letter_id`, id)
	if err != nil {
		return nil, fmt.Errorf("read the dead letters of request %d: %w", id, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read the dead letters of request %d: %w", id, err)
	}
	return ids, nil
}

// Items returns up to limit items of a request, in order.
func (s *Service) Items(ctx context.Context, id int64, limit int) ([]Item, error) {
	items, err := requestItems(ctx, s.pool, id, limit)
	if err != nil {
		return nil, fmt.Errorf("read replay items: %w", err)
	}
	return items, nil
}

func requestItems(ctx context.Context, q querier, id int64, limit int) ([]Item, error) {
	rows, err := q.Query(ctx, selectItems, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanItemOutcome)
}

// liveItems reads every live item of request id, in order, with its
// headers whole: the intent hash binds them (ItemHash, HeadersHash), and
// an item's audit row records their hash. Only the steps that change a
// request and hash it again (its submit, an edit, items left out) and
// those that write its items' audit rows (auditItems) read them so; what
// only judges the items, every page included, reads of the headers only
// the facts the rules need (requestFacts).
func liveItems(ctx context.Context, q querier, id int64) ([]Item, error) {
	rows, err := q.Query(ctx, selectLiveItems, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanItem)
}

// Approvals returns the sign-offs of a request.
func (s *Service) Approvals(ctx context.Context, id int64) ([]Approval, error) {
	return approvals(ctx, s.pool, id)
}

func approvals(ctx context.Context, q querier, id int64) ([]Approval, error) {
	rows, err := q.Query(ctx, selectApprovals, id)
	if err != nil {
		return nil, fmt.Errorf("read approvals: %w", err)
	}
	return pgx.CollectRows(rows, scanApproval)
}

// Progress counts the items of request id by outcome, and the pending
// ones the broker did not store at their last publish (NotStored).
func (s *Service) Progress(ctx context.Context, id int64) (Progress, error) {
	p, err := progressNotStored(ctx, s.pool, id)
	if err != nil {
		return Progress{}, fmt.Errorf("read replay progress: %w", err)
	}
	return p, nil
}

// progressNotStored is progress with NotStored read too (the request page
// and its poll).
func progressNotStored(ctx context.Context, q querier, id int64) (Progress, error) {
	p, err := progress(ctx, q, id)
	if err == nil && p.Pending > 0 {
		err = q.QueryRow(ctx, selectNotStored, id).Scan(&p.NotStored, &p.NotStoredWhy)
	}
	return p, err
}

// selectNotStored counts the pending jobs of request $1 whose last publish
// was not stored (replay_jobs_request_idx), with one's reason.
const selectNotStored = `SELECT count(*), coalesce(min(result), '') FROM replay_jobs
WHERE request_id = $1 AND state IN ('pending', 'claimed') AND starts_with(result, '` + replaypolicy.NotSentLead + `')`

func progress(ctx context.Context, q querier, id int64) (Progress, error) {
	all, err := outcomes(ctx, q, []int64{id})
	return all[id].Progress, err
}

// decide is what the replay rules say request req needs now, as seen by
// actor: every live item judged as it stands, and the request's own rules,
// its requester as recorded and as the directory has them now (req read
// by getRequest, which reads RequesterNow).
func (s *Service) decide(ctx context.Context, q querier, req Request, actor quarantine.Actor) (replaypolicy.Decision, error) {
	fs, err := s.requestFacts(ctx, q, req)
	if err != nil {
		return replaypolicy.Decision{}, err
	}
	as, err := approvals(ctx, q, req.ID)
	if err != nil {
		return replaypolicy.Decision{}, err
	}
	now, err := s.judgedAt(ctx, q)
	if err != nil {
		return replaypolicy.Decision{}, err
	}
	return replaypolicy.DecideItems(s.cfg.Policy(), items(fs), actor, policyRequest(req, as), now), nil
}

// judgedAt is the time the replay rules judge approvals at: the later of
// this console's clock (Config.Now) and the database's. A console whose
// clock is slow must not count an approval the database's clock says has
// expired (one whose clock is fast already counts none it dates in the
// future). Approvals, and a request's approval, are dated by Config.Now
// but never after the database's clock (insertApproval, approveRequest):
// a console whose clock runs ahead would otherwise date them in the
// future, and every worker, its clock right, would judge their expiry
// from that date, letting them last longer by the skew
// (TestRevGov17FastConsoleApprovalOutlivesItsExpiry). So a console's skew
// can only make approvals count for less, never for more.
func (s *Service) judgedAt(ctx context.Context, q querier) (time.Time, error) {
	db, err := dbNow(ctx, q)
	return later(s.cfg.Now(), db), err
}

// dbNow reads the database's clock (the transaction's start, in q's
// transaction).
func dbNow(ctx context.Context, q querier) (time.Time, error) {
	var db time.Time
	if err := q.QueryRow(ctx, `SELECT now()`).Scan(&db); err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %w", err)
	}
	return db, nil
}

// Decision says what the request needs now, as seen by actor.
func (s *Service) Decision(ctx context.Context, id int64, actor quarantine.Actor) (replaypolicy.Decision, error) {
	var d replaypolicy.Decision
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		req, err := getRequest(ctx, tx, id, false)
		if err != nil {
			return err
		}
		d, err = s.decide(ctx, tx, req, actor)
		return err
	})
	if err != nil {
		return replaypolicy.Decision{}, fmt.Errorf("decide replay %d: %w", id, err)
	}
	return d, nil
}

// ConfirmationFor returns what the requester (and approvers) must type to
// confirm request id, or "" when none of the classes it is held to asks
// for a typed confirmation (confirmationOf).
func (s *Service) ConfirmationFor(ctx context.Context, id int64) (string, error) {
	req, err := s.Request(ctx, id)
	if err != nil {
		return "", err
	}
	fs, err := s.requestFacts(ctx, s.pool, req)
	if err != nil {
		return "", fmt.Errorf("confirmation for replay %d: %w", id, err)
	}
	t := s.cfg.Policy()
	return confirmationOf(t, req, fs, heldTo(t, req, fs)), nil
}

// confirmationOf is the phrase the rules ask to type for req, whose live
// items are fs and which is held to the classes union besides its class
// (heldTo), or "": replaypolicy.Table.Confirmation, the rule the submit
// and the approval check (JudgeRequest), of its first live item.
func confirmationOf(t *replaypolicy.Table, req Request, fs []itemFact, union []replaypolicy.Class) string {
	var first replaypolicy.Item
	if len(fs) > 0 {
		first = fs[0].item
	}
	return t.Confirmation(req.Class, union, first, policyRequest(req, nil))
}

// heldTo is every class req is held to besides its class (what
// replaypolicy.Table.RequestKnobs takes with it): once submitted, those
// its submit stored (Request.Classes); for a draft, those its live items
// fs are classed by now, judged as its submit will judge them (AtRequest,
// as onSubmit and submitOne; replaypolicy.RequestUnion, JudgeRequest's
// Terms.Union).
func heldTo(t *replaypolicy.Table, req Request, fs []itemFact) []replaypolicy.Class {
	if req.Status != StatusDraft {
		return req.Classes
	}
	its := items(fs)
	verdicts := make([]replaypolicy.Verdict, len(its))
	for i, it := range its {
		verdicts[i] = replaypolicy.JudgeItem(t, it, replaypolicy.AtRequest)
	}
	return replaypolicy.RequestUnion(verdicts)
}

// ItemPayload is the payload a request will send for one of its items,
// and the message and operation ids it is sent under (which the audit row
// of its download names).
type ItemPayload struct {
	Data               []byte
	MsgID, OperationID string
	// Removed: retention removed the dead letter and its payload (Data is
	// nil): nothing of it is left to download.
	Removed bool
}

// ItemPayload returns the payload a request will send for one of its live
// items, or not_found.
func (s *Service) ItemPayload(ctx context.Context, id, deadLetterID int64) (ItemPayload, error) {
	var p ItemPayload
	err := s.pool.QueryRow(ctx, selectItemPayload, id, deadLetterID).Scan(&p.Data, &p.MsgID, &p.OperationID, &p.Removed)
	if errors.Is(err, pgx.ErrNoRows) {
		return ItemPayload{}, fmt.Errorf("item %d of replay %d: %w", deadLetterID, id, errNoItem)
	}
	if err != nil {
		return ItemPayload{}, fmt.Errorf("item %d of replay %d: %w", deadLetterID, id, err)
	}
	return p, nil
}

const selectBatchTenants = `SELECT DISTINCT tenant FROM replay_requests WHERE batch = $1`

// BatchTenants returns the tenants of the requests of a selection (one or
// more), or not_found.
func (s *Service) BatchTenants(ctx context.Context, batch string) ([]string, error) {
	rows, err := s.pool.Query(ctx, selectBatchTenants, batch)
	if err != nil {
		return nil, fmt.Errorf("tenants of replay batch: %w", err)
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err == nil && len(tenants) == 0 {
		return nil, fmt.Errorf("replay batch %q: %w", batch, errNoBatch)
	}
	return tenants, err
}
