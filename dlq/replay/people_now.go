package replay

import (
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

// requesterNowColumns are the columns of a request's requester as the
// directory has them now (empty when never seen), from joinRequesterNow on
// replay_requests r; requesterNowInto scans them. The lists that judge
// who may act on many requests read them with the rows rather than one
// look-up a request.
const (
	requesterNowColumns = `coalesce(rn.issuer, ''), coalesce(rn.subject, ''), coalesce(rn.email, ''), coalesce(rn.email_verified, false)`
	joinRequesterNow    = `LEFT JOIN user_directory rn ON rn.issuer = r.requester_issuer AND rn.subject = r.requester_subject`
)

// requesterNowInto are the scan targets of requesterNowColumns, into
// r.RequesterNow.
func requesterNowInto(r *Request) []any {
	return []any{&r.RequesterNow.Issuer, &r.RequesterNow.Subject, &r.RequesterNow.Email, &r.RequesterNow.EmailVerified}
}

// scanRequestNow scans requestColumns and requesterNowColumns: a request
// with its requester as the directory has them now.
func scanRequestNow(row pgx.CollectableRow) (Request, error) {
	var r Request
	return r, scanRequestInto(row, &r, requesterNowInto(&r)...)
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
// MayApprove).
func (r Request) MayReconcile(actor quarantine.Actor) replaypolicy.Verdict {
	return replaypolicy.MayReconcile(policyRequest(r, nil), actor)
}
