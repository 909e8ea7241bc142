package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// A page of the requests that may wait for the viewer's approval: pending
// (replay_requests_pending_idx, a partial index of the few requests that
// wait), of a class in a tenant they may approve (inScope, $1 and $2, as
// the approvals page), not their own identity's; those their identity has
// an approval of that is not voided last (mine: it may have lapsed,
// ApprovedBy judges it), then the longest waiting first, as the approvals
// page lists them; after the cursor ($5 mine, NULL for the start, $6 time,
// $7 id), at most $8; each with its requester as the directory has them
// now (joinRequesterNow), whom MayApprove compares too.
const selectAwaiting = `SELECT ` + requestColumns + `, ` + peopleColumns + `, mine, since
    FROM (SELECT r.*, coalesce(r.submitted_at, r.created_at) AS since,
                 EXISTS (SELECT 1 FROM replay_approvals a WHERE a.request_id = r.id AND a.voided_at IS NULL
                         AND a.approver_issuer = $3 AND a.approver_subject = $4) AS mine
          FROM replay_requests r
          WHERE r.status = 'pending_approval' -- only requests that wait for an approval
            AND ` + inScope + ` -- only what the viewer may approve, before the LIMIT: requests of others cannot crowd theirs out
            AND NOT (r.requester_issuer = $3 AND r.requester_subject = $4)) r -- never one's own
    ` + joinRequesterNow + `
    WHERE $5::boolean IS NULL OR (mine, since, id) > ($5, $6, $7)
    ORDER BY mine, since, id
    LIMIT $8`

// awaitingRows is how many rows a page of Awaiting reads per request it
// counts at most: enough that the ones the rules set aside in Go (the
// viewer's own request under another identity, one they approved) rarely
// take a second page.
const awaitingRows = 4

// Awaiting returns how many requests wait for the viewer's approval, up to
// most: requests of a class in a tenant may lets them approve (as
// WaitingFilter.May: the approvals page lists the same ones), that the
// replay rules let them approve (not a request of someone who may be them,
// each as the request recorded them or as the directory has them now,
// under every address seen: replaypolicy.MayApprove, as Approve judges it) and that nobody who may
// be them has an approval of that still counts (ApprovedBy: a voided or
// lapsed one is theirs to give again; one of their other identities'
// that counts leaves them nothing to approve).
// Class, tenant and their own identity are filtered in SQL; the rest, in
// Go, reads on page after page (of awaitingRows × most requests and their
// approvals, in one snapshot) until most are counted or none is left, so
// no request set aside hides one that waits.
func (s *Service) Awaiting(ctx context.Context, may []ClassScope, viewer quarantine.Actor, most int) (int, error) {
	if most <= 0 || len(may) == 0 {
		return 0, nil
	}
	classes, tenants := scopeArrays(may)
	n := 0
	err := s.read(ctx, func(tx pgx.Tx) error {
		// The viewer as Approve judges them (asTheyAreNow).
		known, err := knownAs(ctx, tx, viewer)
		if err != nil {
			return err
		}
		viewerNow, err := identityNow(ctx, tx, viewer)
		if err != nil {
			return err
		}
		var (
			mine  *bool
			since time.Time
			id    int64
		)
		for {
			rows, err := tx.Query(ctx, selectAwaiting, classes, tenants, viewer.Issuer, viewer.Subject, mine, since, id, awaitingRows*most)
			if err != nil {
				return err
			}
			var m bool
			reqs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Request, error) {
				var r Request
				return r, scanRequestInto(row, &r, append(peopleInto(&r), &m, &since)...)
			})
			if err != nil {
				return err
			}
			if len(reqs) == 0 {
				return nil
			}
			ids := make([]int64, len(reqs))
			for i, r := range reqs {
				ids[i] = r.ID
			}
			as, err := approvalsOf(ctx, tx, ids)
			if err != nil {
				return err
			}
			for _, r := range reqs {
				r = r.SeenBy(known)
				if r.MayApprove(viewer, viewerNow).Outcome != replaypolicy.Go || s.ApprovedBy(r, as[r.ID], viewer) {
					continue
				}
				if n++; n >= most {
					return nil
				}
			}
			if len(reqs) < awaitingRows*most {
				return nil
			}
			mine, id = &m, reqs[len(reqs)-1].ID
		}
	})
	if err != nil {
		return 0, fmt.Errorf("count requests awaiting approval: %w", err)
	}
	return n, nil
}
