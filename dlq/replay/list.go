package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// ListFilter selects the requests of the replays page. Tenants (every one
// when All) is the viewer's scope; Viewer sees their own drafts and no one
// else's. Status, Tenant and Class narrow it ("" for any), Mine to the
// viewer's requests, Requester to requests whose requester's email starts
// with it (in any case, verified or not: a search, "" for anyone),
// RequesterIssuer and RequesterSubject to the requests of exactly that
// identity (both given, or neither), From and To to those submitted (a
// draft: made) at or after From and before To (zero: no bound),
// Reconcile to those with an item that waits for a person to reconcile
// it (needs_reconciliation: nobody can know whether it landed). The page
// goes newest first, with MineFirst the viewer's own requests before
// everyone else's (each part newest first); After is the last row of the
// page before (zero: the first page).
type ListFilter struct {
	Tenants   []string
	All       bool
	Viewer    quarantine.Actor
	Status    Status
	Mine      bool
	Tenant    string
	Class     replaypolicy.Class
	Requester string
	// RequesterIssuer and RequesterSubject are one identity: "this
	// requester's requests" (no email makes two identities one).
	RequesterIssuer, RequesterSubject string
	From, To                          time.Time
	Reconcile                         bool
	MineFirst                         bool
	After                             Cursor
	Limit                             int
}

// Cursor is a place in the replays page's order: request ID, and whether
// it is the viewer's own (Own: it matters only when the page lists the
// viewer's requests first).
type Cursor struct {
	ID  int64
	Own bool
}

// Listed is one request on the replays page: with its items counted by
// outcome, its approvals so far, and when what it waits for expires.
type Listed struct {
	Request
	// OwnFirst is whether it was listed among the viewer's own requests,
	// before everyone else's (only with MineFirst).
	OwnFirst bool
	Progress Progress
	// Items are its items as every page counts them (CountItems).
	Items ItemCounts
	Count ApprovalCount
	// Approvals are its approvals so far, voided ones too.
	Approvals []Approval
	// Expires is when the draft expires, the first approval given so far
	// stops counting, or an approval not yet acted on lapses; nil when
	// nothing of it expires. Lapse says which of the three it is.
	Expires *time.Time
	Lapse   Lapse
	// CameBack is how many of its items counted replayed came back as new
	// dead letters (CameBacks.Replayed).
	CameBack int
}

// Lapse is what of a listed request expires at Listed.Expires.
type Lapse string

// What expires (Listed.Lapse).
const (
	// LapseDraft: the draft, never submitted (REPLAY_DRAFT_TTL after it
	// was frozen), which is then void.
	LapseDraft Lapse = "draft"
	// LapseApproval: the first approval that counts of a request waiting
	// for approval stops counting (the class's approval_expiry), and the
	// request falls back a count.
	LapseApproval Lapse = "approval"
	// LapseStart: an approved request that has not started may start no
	// later (replaypolicy.StartBy); past it, the worker blocks its items.
	LapseStart Lapse = "start"
)

// Cursor is where the page after l starts.
func (l Listed) Cursor() Cursor { return Cursor{ID: l.ID, Own: l.OwnFirst} }

// requesterIs is the SQL test that the requester of a request is the
// viewer (@viewer_issuer, @viewer_subject): "mine", and whose draft it is
// (quarantine.Actor.SameIdentity: an email never makes two identities one).
const requesterIs = `(requester_issuer = @viewer_issuer AND requester_subject = @viewer_subject)`

// The conditions of the replays page's filters (listSelectionOf), each in
// a form an index serves: the tenant scope and a status or class lead
// replay_requests_tenant_status_idx and replay_requests_tenant_class_idx
// (both end with id, so one tenant's page is read newest first and stops);
// the requester is an escaped LIKE prefix of the lower-case email
// (replay_requests_requester_email_idx), or exactly one identity
// (replay_requests_requester_idx); the time bounds are on when it was
// submitted, or made for a draft (replay_requests_problems_idx for the
// dashboard's "done with problems" since a time). The requests waiting for
// reconciliation are a semi join on replay_jobs_unsettled_idx (partial: the
// items in needs_reconciliation, a handful): an IN, not an OR with EXISTS,
// which PostgreSQL cannot pull up and ran as a hashed subplan over every
// request.
const (
	condTenants        = `tenant = ANY(@tenants)`
	condUnsubmittedOwn = `(submitted_at IS NOT NULL OR ` + requesterIs + `)` // one never submitted is its requester's alone (Request.HiddenFrom)
	condStatus         = `status = @status`
	condTenant         = `tenant = @tenant`
	condClass          = `class = @class`
	condRequester      = `lower(requester_email) LIKE @requester`
	condIdentity       = `(requester_issuer = @requester_issuer AND requester_subject = @requester_subject)` // one identity, never a look-alike email
	condFrom           = `coalesce(submitted_at, created_at) >= @from`
	condTo             = `coalesce(submitted_at, created_at) < @to`
	condReconcile      = `id IN (SELECT request_id FROM replay_jobs WHERE state = 'needs_reconciliation')`
	condOlder          = `id < @after`
	condNotMine        = `NOT ` + requesterIs
	requestsNewest     = ` ORDER BY id DESC LIMIT @limit`
)

// listSelection is what a ListFilter selects: only the conditions of the
// filters it sets, and their named arguments. A filter left out is not in
// the statement at all (no catch-all "the filter is empty OR ...", which a
// generic plan keeps and which hides every index from it, and which made
// the reconcile filter's EXISTS a subplan tested on every request), so
// each combination of filters is its own statement, planned for what it
// asks (as audit's selection builds its statements).
type listSelection struct {
	conds []string
	args  pgx.NamedArgs
}

// add adds conds with their arguments.
func (s *listSelection) add(args pgx.NamedArgs, conds ...string) {
	s.conds = append(s.conds, conds...)
	maps.Copy(s.args, args)
}

// where is the selection's conditions and extra, joined by AND.
func (s *listSelection) where(extra ...string) string {
	all := append(slices.Clip(s.conds), extra...)
	if len(all) == 0 {
		return "TRUE"
	}
	return strings.Join(all, "\n      AND ")
}

// listSelectionOf is the selection of f, its cursor, order and limit aside:
// the requests of the viewer's tenants (every one when All), none someone
// else never submitted, and each filter f sets (see ListFilter).
func listSelectionOf(f ListFilter) *listSelection {
	// The viewer's identity is in every selection's arguments: pgx sends
	// only the named arguments a statement names.
	s := &listSelection{args: pgx.NamedArgs{"viewer_issuer": f.Viewer.Issuer, "viewer_subject": f.Viewer.Subject}}
	if !f.All {
		s.add(pgx.NamedArgs{"tenants": f.Tenants}, condTenants)
	}
	// Whatever the status filter: a voided or cancelled request may never
	// have been submitted either.
	s.add(nil, condUnsubmittedOwn)
	switch {
	case f.Status == "": // every status
	case slices.Contains(requestStatuses, f.Status):
		// The status written in the statement (one of ours, never the
		// viewer's text): each status is a statement of its own, whose
		// plan, generic or not, knows it. The statuses are far from even
		// (done is most of the history, rejected or void a few), and a
		// partial index (draft, pending_approval, done_with_problems)
		// serves only a statement that names its status.
		s.add(nil, `status = '`+string(f.Status)+`'`)
	default: // no request's: the page says so
		s.add(pgx.NamedArgs{"status": string(f.Status)}, condStatus)
	}
	if f.Status == StatusDraft {
		s.add(nil, requesterIs) // a draft is its requester's alone
	}
	if f.Mine {
		s.add(nil, requesterIs)
	}
	if f.Tenant != "" {
		s.add(pgx.NamedArgs{"tenant": f.Tenant}, condTenant)
	}
	if f.Class != "" {
		s.add(pgx.NamedArgs{"class": string(f.Class)}, condClass)
	}
	if f.Requester != "" {
		s.add(pgx.NamedArgs{"requester": likePrefix(strings.ToLower(f.Requester))}, condRequester)
	}
	if f.RequesterIssuer != "" {
		s.add(pgx.NamedArgs{"requester_issuer": f.RequesterIssuer, "requester_subject": f.RequesterSubject}, condIdentity)
	}
	if !f.From.IsZero() {
		s.add(pgx.NamedArgs{"from": f.From}, condFrom)
	}
	if !f.To.IsZero() {
		s.add(pgx.NamedArgs{"to": f.To}, condTo)
	}
	if f.Reconcile {
		s.add(nil, condReconcile)
	}
	return s
}

// listQuery is the replays page of f and its arguments: with MineFirst the
// viewer's requests newest first (replay_requests_requester_idx) and then
// everyone else's; without it, everyone's newest first. Each part reads at
// most a page (@limit: f.Limit+1, to tell there are more) from an index in
// id order, so the order costs no sort of every request. The cursor is the
// last row of the page before: a page that ended among the others has no
// own request left (the first part is left out), and the others start
// over after the last own request.
//
// Each with its requester as the directory has them now (joinRequesterNow),
// as the request page counts its approvals (CountOf).
func listQuery(f ListFilter) (string, pgx.NamedArgs) {
	s := listSelectionOf(f)
	s.args["limit"] = f.Limit + 1
	var parts []string
	if f.MineFirst && (f.After.ID == 0 || f.After.Own) {
		own := []string{requesterIs}
		if f.After.ID != 0 {
			own = append(own, condOlder)
		}
		parts = append(parts, `(SELECT `+requestColumns+`, true AS own FROM replay_requests
     WHERE `+s.where(own...)+requestsNewest+`)`)
	}
	var others []string
	if f.MineFirst {
		others = append(others, condNotMine)
	}
	if f.After.ID != 0 && !(f.MineFirst && f.After.Own) {
		others = append(others, condOlder)
	}
	if f.After.ID != 0 {
		s.args["after"] = f.After.ID
	}
	parts = append(parts, `(SELECT `+requestColumns+`, false AS own FROM replay_requests
     WHERE `+s.where(others...)+requestsNewest+`)`)
	return `SELECT ` + requestColumns + `, ` + peopleColumns + `, own FROM (
    ` + strings.Join(parts, "\n    UNION ALL\n    ") + `
) r ` + joinRequesterNow + ` ORDER BY own DESC, id DESC LIMIT @limit`, s.args
}

// The approvals of several requests.
const selectApprovalsOf = `SELECT a.request_id, a.approver_issuer, a.approver_subject, a.approver_email, a.approver_email_verified, a.intent_hash,
        a.approved_at, a.voided_at, a.void_reason, ` + approverNow + `
    FROM replay_approvals a ` + joinApproverNow + ` WHERE a.request_id = ANY($1) ORDER BY a.approved_at`

// likePrefix is a LIKE pattern for the strings that start with s.
func likePrefix(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
}

// List returns a page of the requests f selects (see ListFilter for the
// order), and whether there are more.
func (s *Service) List(ctx context.Context, f ListFilter) ([]Listed, bool, error) {
	var out []Listed
	err := s.read(ctx, func(tx pgx.Tx) error {
		sql, args := listQuery(f)
		rows, err := tx.Query(ctx, sql, args)
		if err != nil {
			return err
		}
		reqs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Listed, error) {
			var l Listed
			err := scanRequestInto(row, &l.Request, append(peopleInto(&l.Request), &l.OwnFirst)...)
			return l, err
		})
		if err != nil {
			return err
		}
		if out, err = s.listed(ctx, tx, reqs); err != nil {
			return err
		}
		return cameBackCounts(ctx, tx, out)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list replay requests: %w", err)
	}
	more := len(out) > f.Limit
	if more {
		out = out[:f.Limit]
	}
	return out, more, nil
}

// listed completes reqs, read in tx, as the lists show them: their items
// by outcome, their approvals and what expires.
func (s *Service) listed(ctx context.Context, tx pgx.Tx, reqs []Listed) ([]Listed, error) {
	ids := make([]int64, len(reqs))
	for i, r := range reqs {
		ids[i] = r.ID
	}
	progress, err := outcomes(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	as, err := approvalsOf(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	table, now := s.cfg.Policy(), s.cfg.Now()
	for i := range reqs {
		l := &reqs[i]
		l.Progress, l.Count = progress[l.ID].Progress, CountOf(table, l.Request, as[l.ID], now)
		l.Expires, l.Lapse = s.expires(table, l.Request, as[l.ID], progress[l.ID].Progress, now)
		l.Approvals = as[l.ID]
		l.Items = CountItems(l.Request, l.Progress)
	}
	return reqs, nil
}

// ItemCountsOf counts the items of each of reqs as every page does
// (CountItems), by request id.
func (s *Service) ItemCountsOf(ctx context.Context, reqs []Request) (map[int64]ItemCounts, error) {
	ids := make([]int64, len(reqs))
	for i, r := range reqs {
		ids[i] = r.ID
	}
	progress, err := outcomes(ctx, s.pool, ids)
	if err != nil {
		return nil, fmt.Errorf("count the items of replay requests: %w", err)
	}
	out := make(map[int64]ItemCounts, len(reqs))
	for _, r := range reqs {
		out[r.ID] = CountItems(r, progress[r.ID].Progress)
	}
	return out, nil
}

func approvalsOf(ctx context.Context, q querier, ids []int64) (map[int64][]Approval, error) {
	rows, err := q.Query(ctx, selectApprovalsOf, ids)
	if err != nil {
		return nil, err
	}
	out := map[int64][]Approval{}
	var id int64
	var a Approval
	_, err = pgx.ForEachRow(rows, []any{&id, &a.Approver.Issuer, &a.Approver.Subject, &a.Approver.Email, &a.Approver.EmailVerified,
		&a.IntentHash, &a.At, &a.VoidedAt, &a.VoidReason, &a.ApproverNow.Issuer, &a.ApproverNow.Subject, &a.ApproverNow.Email,
		&a.ApproverNow.EmailVerified}, func() error {
		out[id] = append(out[id], a)
		return nil
	})
	return out, err
}

// expires is when what req waits for expires (see Listed.Expires), and
// what does: a draft after the draft time to live (LapseDraft); of one
// waiting for approval, the first approval that counts now
// (replaypolicy.FirstLapse, LapseApproval); an approved request that has
// not started, when its approval stops letting it start
// (replaypolicy.StartBy: the first approval it counted, plus the approval
// expiry, LapseStart), as the worker blocks it then; nothing once a worker
// took an item of it up (p: an outcome but pending; a deferred one counts,
// as replaypolicy.Run.Deferred does for ApprovalLapse).
func (s *Service) expires(t *replaypolicy.Table, req Request, as []Approval, p Progress, now time.Time) (*time.Time, Lapse) {
	var e time.Time
	var what Lapse
	switch {
	case req.Status == StatusDraft && s.cfg.DraftTTL > 0:
		e, what = req.CreatedAt.Add(s.cfg.DraftTTL), LapseDraft
	case req.Status == StatusApproved && req.ApprovedAt != nil && p.Deferred+p.Unknown+p.Replayed+p.Suppressed+p.NeedsReconciliation == 0:
		e, what = replaypolicy.StartBy(t, policyRequest(req, as), *req.ApprovedAt), LapseStart
	case req.Status == StatusPendingApproval:
		e, what = replaypolicy.FirstLapse(t, policyRequest(req, as), now), LapseApproval
	}
	if e.IsZero() {
		return nil, ""
	}
	return &e, what
}

// The replays page counts, newest first, at most countedRequests of the
// requests a filter selects, and of those only as many as hold
// countedItems items between them (the newest always, whatever its size:
// at most a class's bulk cap), so a page view reads a bounded number of
// rows whatever the history holds.
const (
	countedRequests = 500
	countedItems    = 20000
)

// ListCounts are the replays page's counts by outcome. Matched is how many
// requests the filter selects (MatchedMore: more than countedRequests);
// Counted how many of them, newest first, the counts cover (all of them
// unless a bound cut them short); ByStatus those by status; Items their
// items by outcome.
type ListCounts struct {
	Matched     int
	MatchedMore bool
	Counted     int
	ByStatus    map[Status]int
	// Items are the items of the counted requests but drafts (a draft's
	// items come to nothing unless it is submitted) by outcome; Counts
	// those as every page counts them (CountItems).
	Items  Progress
	Counts ItemCounts
}

// selectListCounts is the replays page's counts of the requests where
// selects (listSelection, read newest first as the page reads them): the
// newest up to the bound (@bound = countedRequests + 1, to tell that there
// are more), those whose items fit the budget (@budget), by status, and
// the items of those that are no draft by outcome (outcomeCounts, summed),
// with the items that have no job yet of the open ones (a status of @open)
// and of the ended ones.
func selectListCounts(where string) string {
	return `WITH matched AS (
    SELECT id, status, item_count + skipped_count AS items FROM replay_requests
    WHERE ` + where + `
    ORDER BY id DESC LIMIT @bound
), counted AS (
    SELECT id, status FROM (SELECT id, status, row_number() OVER w AS n, sum(items) OVER w AS running
                            FROM matched WINDOW w AS (ORDER BY id DESC)) m
    WHERE n < @bound AND (n = 1 OR running <= @budget) -- the newest one always; then as many as the item budget holds
), statuses AS (
    SELECT coalesce(array_agg(status), '{}') AS status, coalesce(array_agg(n), '{}') AS n
    FROM (SELECT status, count(*) AS n FROM counted GROUP BY status) s
), items AS (
    SELECT coalesce(sum(pending), 0)::bigint, coalesce(sum(deferred), 0)::bigint, coalesce(sum(unknown), 0)::bigint,
           coalesce(sum(replayed), 0)::bigint, coalesce(sum(skipped), 0)::bigint, coalesce(sum(suppressed), 0)::bigint,
           coalesce(sum(blocked), 0)::bigint, coalesce(sum(reconcile), 0)::bigint, coalesce(sum(cancelled), 0)::bigint,
           coalesce(sum(not_applied), 0)::bigint, coalesce(sum(applied), 0)::bigint,
           coalesce(sum(left_skipped), 0)::bigint, coalesce(sum(left_blocked), 0)::bigint,
           coalesce(sum(rest) FILTER (WHERE open), 0)::bigint, coalesce(sum(rest) FILTER (WHERE NOT open), 0)::bigint
    FROM (SELECT *, greatest(size - (pending + deferred + unknown + replayed + skipped + suppressed + blocked + reconcile + cancelled
                                     + not_applied + applied + left_skipped + left_blocked), 0) AS rest -- items with no job and not left out
          FROM (SELECT r.status = ANY(@open) AS open, r.item_count + r.skipped_count AS size, ` + outcomeCounts + `
                FROM counted c JOIN replay_requests r ON r.id = c.id LEFT JOIN replay_jobs j ON j.request_id = r.id
                WHERE c.status <> 'draft' -- a draft's items come to nothing unless it is submitted
                GROUP BY r.id) r) o
)
SELECT (SELECT count(*) FROM matched), (SELECT count(*) FROM counted), statuses.status, statuses.n, items.*
FROM statuses, items`
}

// Counts counts the requests f selects (its page cursor and order aside)
// by status and their items by outcome: see ListCounts for the bounds.
func (s *Service) Counts(ctx context.Context, f ListFilter) (ListCounts, error) {
	return s.counts(ctx, f, countedRequests, countedItems)
}

// counts counts at most requests requests, and of those as many as hold
// items items.
func (s *Service) counts(ctx context.Context, f ListFilter, requests, items int) (ListCounts, error) {
	var c ListCounts
	var statuses []string
	var ns []int
	var toGo, notRun int
	dest := append(append([]any{&c.Matched, &c.Counted, &statuses, &ns}, progressTargets(&c.Items)...), &toGo, &notRun)
	sel := listSelectionOf(f)
	sel.add(pgx.NamedArgs{"bound": requests + 1, "budget": items, "open": openStatuses()})
	err := s.pool.QueryRow(ctx, selectListCounts(sel.where()), sel.args).Scan(dest...)
	if err != nil {
		return ListCounts{}, fmt.Errorf("count replay requests: %w", err)
	}
	c.Counts = itemCounts(c.Items, toGo, notRun)
	if c.Matched > requests {
		c.Matched, c.MatchedMore = requests, true
	}
	c.ByStatus = make(map[Status]int, len(statuses))
	for i, st := range statuses {
		c.ByStatus[Status(st)] = ns[i]
	}
	return c, nil
}

// ApprovedBy reports whether me, or someone who may be them
// (replaypolicy.MayBeOne: each approver as recorded and as the directory
// has them now), gave one of as, the approvals of req, that still counts
// now (the service's clock, as List counts them): not voided, and not
// lapsed (expired under the class's approval expiry, or given to another
// intent); replaypolicy.ApprovalStands, the check Approve refuses a second
// approval with. A lapsed one is theirs to give again.
func (s *Service) ApprovedBy(req Request, as []Approval, me quarantine.Actor) bool {
	return replaypolicy.ApprovalStands(s.cfg.Policy(), policyRequest(req, as), me, s.cfg.Now())
}
