package replay

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// ListFilter selects the requests of the replays page. Tenants (every one
// when All) is the viewer's scope; Viewer sees their own drafts and no one
// else's. Status, Tenant and Class narrow it ("" for any), Mine to the
// viewer's requests. The page goes by id, newest first: Before is the id
// the next page starts below (0: the first page).
type ListFilter struct {
	Tenants []string
	All     bool
	Viewer  quarantine.Actor
	Status  Status
	Mine    bool
	Tenant  string
	Class   replaypolicy.Class
	Before  int64
	Limit   int
}

// Listed is one request on the replays page: with its items counted by
// outcome, its approvals so far, and when what it waits for expires.
type Listed struct {
	Request
	Progress Progress
	Count    ApprovalCount
	// Expires is when the draft expires, the first approval given so far
	// stops counting, or an approval not yet acted on lapses; nil when
	// nothing of it expires.
	Expires *time.Time
}

// requesterIs is the SQL test that the requester of a request is the
// identity $3 (issuer), $4 (subject): "mine", and whose draft it is
// (quarantine.Actor.SameIdentity: an email never makes two identities one).
const requesterIs = `(requester_issuer = $3 AND requester_subject = $4)`

// The replays page, by id newest first (the primary key, or
// replay_requests_tenant_id_idx for one tenant).
const selectList = `SELECT ` + requestColumns + ` FROM replay_requests
    WHERE (tenant = ANY($1) OR $2) -- only the viewer's tenants
      AND (status <> 'draft' OR ` + requesterIs + `) -- a draft is its requester's alone
      AND ($5 = '' OR status = $5)
      AND (NOT $6 OR ` + requesterIs + `)
      AND ($7 = '' OR tenant = $7)
      AND ($8 = '' OR class = $8)
      AND ($9 = 0 OR id < $9)
    ORDER BY id DESC LIMIT $10`

// The approvals of several requests.
const selectApprovalsOf = `SELECT request_id, approver_issuer, approver_subject, approver_email, approver_email_verified, intent_hash, approved_at
    FROM replay_approvals WHERE request_id = ANY($1) ORDER BY approved_at`

// List returns a page of the requests f selects, newest first, and
// whether there are more.
func (s *Service) List(ctx context.Context, f ListFilter) ([]Listed, bool, error) {
	var out []Listed
	err := s.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, selectList, f.Tenants, f.All, f.Viewer.Issuer, f.Viewer.Subject,
			string(f.Status), f.Mine, f.Tenant, string(f.Class), f.Before, f.Limit+1)
		if err != nil {
			return err
		}
		reqs, err := pgx.CollectRows(rows, scanRequest)
		if err != nil {
			return err
		}
		ids := make([]int64, len(reqs))
		for i, r := range reqs {
			ids[i] = r.ID
		}
		progress, err := outcomes(ctx, tx, ids)
		if err != nil {
			return err
		}
		as, err := approvalsOf(ctx, tx, ids)
		if err != nil {
			return err
		}
		table, now := s.cfg.Policy(), s.cfg.Now()
		for _, r := range reqs {
			out = append(out, Listed{Request: r, Progress: progress[r.ID].Progress, Count: CountOf(table, r, as[r.ID], now),
				Expires: s.expires(table, r, as[r.ID], now)})
		}
		return nil
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

func approvalsOf(ctx context.Context, q querier, ids []int64) (map[int64][]Approval, error) {
	rows, err := q.Query(ctx, selectApprovalsOf, ids)
	if err != nil {
		return nil, err
	}
	out := map[int64][]Approval{}
	var id int64
	var a Approval
	_, err = pgx.ForEachRow(rows, []any{&id, &a.Approver.Issuer, &a.Approver.Subject, &a.Approver.Email, &a.Approver.EmailVerified,
		&a.IntentHash, &a.At}, func() error {
		out[id] = append(out[id], a)
		return nil
	})
	return out, err
}

// expires is when what req waits for expires (see Listed.Expires): a
// draft after the draft time to live; the first approval that counts
// after the class's approval expiry; an approved request that has not
// started, approval expiry after its approval.
func (s *Service) expires(t *replaypolicy.Table, req Request, as []Approval, now time.Time) *time.Time {
	k, ok := t.Knobs(req.Class)
	at := func(from time.Time, d time.Duration) *time.Time { e := from.Add(d); return &e }
	switch {
	case req.Status == StatusDraft && s.cfg.DraftTTL > 0:
		return at(req.CreatedAt, s.cfg.DraftTTL)
	case !ok:
		return nil
	case req.Status == StatusApproved && req.ApprovedAt != nil:
		return at(*req.ApprovedAt, k.ApprovalExpiry)
	case req.Status == StatusPendingApproval:
		for _, a := range as { // oldest first
			if e := a.At.Add(k.ApprovalExpiry); e.After(now) && bytes.Equal(a.IntentHash, req.IntentHash) {
				return &e
			}
		}
	}
	return nil
}

// Awaiting returns how many requests wait for the viewer's approval: in
// tenants (every one when all), of a tenant and class may says they may
// approve, that the replay rules let them approve (not a request of
// someone who may be them: replaypolicy.MayApprove) and that they (as the
// rules count people) have not approved yet.
func (s *Service) Awaiting(ctx context.Context, tenants []string, all bool, viewer quarantine.Actor, may func(tenant string, class replaypolicy.Class) bool) (int, error) {
	n := 0
	err := s.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, selectPending, tenants, all)
		if err != nil {
			return err
		}
		reqs, err := pgx.CollectRows(rows, scanRequest)
		if err != nil {
			return err
		}
		ids := make([]int64, 0, len(reqs))
		for _, r := range reqs {
			if may(r.Tenant, r.Class) && replaypolicy.MayApprove(policyRequest(r, nil), viewer).Outcome == replaypolicy.Go {
				ids = append(ids, r.ID)
			}
		}
		as, err := approvalsOf(ctx, tx, ids)
		if err != nil {
			return err
		}
	next:
		for _, id := range ids {
			for _, a := range as[id] {
				if replaypolicy.SamePerson(a.Approver, viewer) {
					continue next
				}
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count requests awaiting approval: %w", err)
	}
	return n, nil
}
