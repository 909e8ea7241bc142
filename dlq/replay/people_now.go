package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Separation of duties compares the people of a request as it recorded
// them and as the directory (user_directory: each identity's last sign-in
// or refresh) has them now: an email changes, and a requester whose
// address became one their second account holds is that account's person
// from then on (replaypolicy.MayBeOne). An entry that is revoked or stale
// still counts here: its email is the provider's last word, and a match
// only takes something away.

// approverNow are the columns of an approval's approver as the directory
// has them now (empty when never seen), from joinApproverNow.
const (
	approverNow     = `coalesce(u.issuer, ''), coalesce(u.subject, ''), coalesce(u.email, ''), coalesce(u.email_verified, false)`
	joinApproverNow = `LEFT JOIN user_directory u ON u.issuer = a.approver_issuer AND u.subject = a.approver_subject`
)

// peopleColumns are the columns of a request's requester as the
// directory has them now (empty when never seen), from joinRequesterNow on
// replay_requests r, and every address each identity approved it under
// (approvedAsColumn); peopleInto scans them. The lists that judge who may
// act on many requests read them with the rows rather than one look-up a
// request.
const (
	peopleColumns = `coalesce(rn.issuer, ''), coalesce(rn.subject, ''), coalesce(rn.email, ''), coalesce(rn.email_verified, false), ` +
		approvedAsColumn
	joinRequesterNow = `LEFT JOIN user_directory rn ON rn.issuer = r.requester_issuer AND rn.subject = r.requester_subject`
	// approvedAsColumn is Request.ApprovedAs of request r: each address
	// each identity approved it under (replay_approval_addresses, by its
	// key), as JSON quarantine.Actor values.
	approvedAsColumn = `coalesce((SELECT jsonb_agg(jsonb_build_object('iss', e.approver_issuer, 'sub', e.approver_subject, 'email', e.approver_email)
            ORDER BY e.approver_issuer, e.approver_subject, e.approver_email)
        FROM replay_approval_addresses e WHERE e.request_id = r.id), '[]')`
)

// peopleInto are the scan targets of peopleColumns, into r.RequesterNow
// and r.ApprovedAs.
func peopleInto(r *Request) []any {
	return []any{&r.RequesterNow.Issuer, &r.RequesterNow.Subject, &r.RequesterNow.Email, &r.RequesterNow.EmailVerified, &r.ApprovedAs}
}

// scanRequestNow scans requestColumns and peopleColumns: a request
// with its requester as the directory has them now, and the addresses its
// approvers approved it under.
func scanRequestNow(row pgx.CollectableRow) (Request, error) {
	var r Request
	return r, scanRequestInto(row, &r, peopleInto(&r)...)
}

// MayApprove says whether actor may approve r: replaypolicy.MayApprove,
// the check Approve makes, with r's requester as it recorded them and as
// the directory has them now (RequesterNow, which every read of a request
// carries). Pages mark a request the viewer may not approve
// with it, so that what they show is what Approve does.
func (r Request) MayApprove(actor quarantine.Actor) replaypolicy.Verdict {
	return replaypolicy.MayApprove(policyRequest(r, nil), actor)
}

// MayReconcile says whether actor may settle an item of r whose outcome
// nobody knows: replaypolicy.MayReconcile, the check Reconcile makes, with
// r's requester as it recorded them and as the directory has them now (as
// MayApprove), and actor as signed in and as the directory has them now
// (actorNow, Service.IdentityNow; zero when not known).
func (r Request) MayReconcile(actor, actorNow quarantine.Actor) replaypolicy.Verdict {
	return replaypolicy.MayReconcile(policyRequest(r, nil), actor, actorNow)
}

// selectIdentityNow is an identity as the directory has it now (no row:
// never seen).
const selectIdentityNow = `SELECT issuer, subject, email, email_verified FROM user_directory WHERE issuer = $1 AND subject = $2`

// IdentityNow is actor's identity as the directory has it now (its email
// may have changed since their session began: another sign-in or a
// refresh of theirs updates it); zero when never seen. The pages judge a
// settle with it as Reconcile does (Request.MayReconcile).
func (s *Service) IdentityNow(ctx context.Context, actor quarantine.Actor) (quarantine.Actor, error) {
	now, err := identityNow(ctx, s.pool, actor)
	if err != nil {
		return quarantine.Actor{}, fmt.Errorf("read %s as the directory has them: %w", actor.Attribution(), err)
	}
	return now, nil
}

func identityNow(ctx context.Context, q querier, actor quarantine.Actor) (quarantine.Actor, error) {
	var now quarantine.Actor
	err := q.QueryRow(ctx, selectIdentityNow, actor.Issuer, actor.Subject).Scan(&now.Issuer, &now.Subject, &now.Email, &now.EmailVerified)
	if errors.Is(err, pgx.ErrNoRows) {
		return quarantine.Actor{}, nil // never seen: the session is all there is to compare
	}
	return now, err
}
