package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// ClassScope is where someone may act on the replays of one class: in
// Tenants, or in every tenant (those to come too) when All.
type ClassScope struct {
	Class   replaypolicy.Class
	Tenants []string
	All     bool
}

// WaitingCursor is a place in the approvals page's order: when the request
// was submitted (made, if it never was) and its id. The zero cursor is the
// start.
type WaitingCursor struct {
	Since time.Time
	ID    int64
}

// WaitingFilter selects a page of the approvals page: the requests waiting
// for an approval of a class in a tenant that May lets the viewer approve,
// the longest waiting first, from After on, at most Limit.
type WaitingFilter struct {
	May   []ClassScope
	After WaitingCursor
	Limit int
}

// WaitingPage is a page of the requests waiting for approval: Requests,
// the longest waiting first, and how many more wait after them (More).
type WaitingPage struct {
	Requests []Listed
	More     int
}

// Next is the cursor of the page after p (zero when it is the last one).
func (p WaitingPage) Next() WaitingCursor {
	if p.More == 0 || len(p.Requests) == 0 {
		return WaitingCursor{}
	}
	last := p.Requests[len(p.Requests)-1]
	return WaitingCursor{Since: waitingSince(last.Request), ID: last.ID}
}

// waitingSince is when req began to wait, as selectWaiting orders it.
func waitingSince(req Request) time.Time {
	if req.SubmittedAt != nil {
		return *req.SubmittedAt
	}
	return req.CreatedAt
}

// inScope keeps the requests r of a class in a tenant the viewer may act
// on: scopeArrays's $1 classes and $2 tenants (a NULL tenant for every
// one). The approvals page and the navigation's count (Awaiting) filter
// with it before their LIMIT, so requests the viewer may not approve
// cannot crowd out theirs.
const inScope = `EXISTS (SELECT 1 FROM unnest($1::text[], $2::text[]) AS may(class, tenant)
                  WHERE may.class = r.class AND (may.tenant IS NULL OR may.tenant = r.tenant))`

// scopeArrays are may as inScope's parameters: a class and a tenant (nil:
// every tenant) for each place where the viewer may act.
func scopeArrays(may []ClassScope) (classes []string, tenants []*string) {
	for _, m := range may {
		if m.All {
			classes, tenants = append(classes, string(m.Class)), append(tenants, nil)
			continue
		}
		for _, t := range m.Tenants {
			classes, tenants = append(classes, string(m.Class)), append(tenants, &t)
		}
	}
	return classes, tenants
}

// The approvals page: requests waiting for an approval
// (replay_requests_pending_idx, a partial index of the few that wait) of a
// class in a tenant the viewer may approve (inScope), the longest waiting
// first, after the cursor ($3 time, NULL for the start, and $4 id), at
// most $5, each with its requester as the directory has them now
// (joinRequesterNow: the page marks the viewer's own requests as Approve
// judges them) and how many there are from the cursor on (the window
// counts before the LIMIT).
const selectWaiting = `SELECT ` + requestColumns + `, ` + peopleColumns + `, count(*) OVER ()
    FROM replay_requests r ` + joinRequesterNow + `
    WHERE r.status = 'pending_approval' -- only requests that wait for an approval
      AND ` + inScope + ` -- only what the viewer may approve, before the LIMIT
      AND ($3::timestamptz IS NULL OR (coalesce(r.submitted_at, r.created_at), r.id) > ($3, $4))
    ORDER BY coalesce(r.submitted_at, r.created_at), r.id
    LIMIT $5`

// Waiting returns a page of the requests waiting for approval that f
// selects, the longest waiting first (submitted earliest; a request's
// approvals expire from the first one given, so the longest waiting are
// also the first to lose theirs), each as List completes it, and how many
// more wait after the page. The viewer's own requests are listed too (the
// page marks them); whether an approval of theirs still counts is
// ApprovedBy's to judge.
func (s *Service) Waiting(ctx context.Context, f WaitingFilter) (WaitingPage, error) {
	classes, tenants := scopeArrays(f.May)
	var since *time.Time
	if !f.After.Since.IsZero() {
		since = &f.After.Since
	}
	var page WaitingPage
	err := s.read(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, selectWaiting, classes, tenants, since, f.After.ID, f.Limit)
		if err != nil {
			return err
		}
		var left int
		reqs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Listed, error) {
			var l Listed
			err := scanRequestInto(row, &l.Request, append(peopleInto(&l.Request), &left)...)
			return l, err
		})
		if err != nil {
			return err
		}
		if page.Requests, err = s.listed(ctx, tx, reqs); err != nil {
			return err
		}
		page.More = max(0, left-len(reqs))
		return nil
	})
	if err != nil {
		return WaitingPage{}, fmt.Errorf("list requests waiting for approval: %w", err)
	}
	return page, nil
}
