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
// replay_requests r, and every name the console knows its people by
// (knownAsColumn); peopleInto scans them. The lists that judge who may act
// on many requests read them with the rows rather than one look-up a
// request.
const (
	peopleColumns = `coalesce(rn.issuer, ''), coalesce(rn.subject, ''), coalesce(rn.email, ''), coalesce(rn.email_verified, false), ` +
		knownAsColumn
	joinRequesterNow = `LEFT JOIN user_directory rn ON rn.issuer = r.requester_issuer AND rn.subject = r.requester_subject`
	// knownAsColumn is Request.KnownAs of request r: its people (its
	// requester, and everyone who ever approved it: replay_approvals, and
	// replay_request_approvers, which an edit that deletes the approvals
	// leaves alone) with every name the console knows them by (linkedFrom).
	knownAsColumn = linkedFrom + `
            SELECT r.requester_issuer, r.requester_subject, 0
            UNION SELECT a.approver_issuer, a.approver_subject, 0 FROM replay_request_approvers a WHERE a.request_id = r.id
            UNION SELECT a.approver_issuer, a.approver_subject, 0 FROM replay_approvals a WHERE a.request_id = r.id` + linkedTo
)

// linkedFrom and linkedTo enclose the people of a request (a query of
// their identities, issuer, subject and depth 0) as every name the
// console knows them by, as JSON quarantine.Actor values: each address
// seen with each of their identities (identity_addresses, verified or
// not), and, following links from those addresses by their mailbox key
// (replaypolicy.Mailbox) to every other identity seen verified with one,
// and on from that identity's addresses seen verified, the addresses seen
// verified of every identity they reach. One person is every name we know
// them by, not only the names of the accounts a request reads: R holds
// r@x, M was seen with r@x and later m@x, G holds m@x, so G is R's, though
// M had no part in the request (replaypolicy.Request.KnownAs).
//
// Only addresses seen verified link past the request's people: an address
// merely claimed (at a provider that does not verify) makes its own
// identity match, as before, but an account outside the request claiming
// two strangers' addresses does not make them one person (who would then
// lose the right to approve each other's requests). The actor judged is
// compared by their own addresses (knownAs): a link between them and a
// person of the request is found from the person's side, whose walk reaches
// every identity the actor's would meet on the way.
//
// The walk is bounded: linkDepth identities away at most, and linkRows
// identities-by-depth read. At either bound the rest is not known, and it
// is never taken for "someone else": the names end with
// replaypolicy.Unfollowed, which makes each person of the request anyone's
// (refused: nobody approves it, the worker publishes nothing). A person
// has a few accounts; a request reaching a bound is a data problem for an
// admin, not a judgement to guess.
const (
	linkedFrom = `coalesce((WITH RECURSIVE walk (issuer, subject, depth) AS (`
	linkedTo   = `
        UNION
            SELECT o.issuer, o.subject, w.depth + 1
            FROM walk w
            JOIN identity_addresses k ON k.issuer = w.issuer AND k.subject = w.subject
                 AND (w.depth = 0 OR k.verified) -- past the people themselves, only an address a provider vouched for links
            JOIN identity_addresses o ON o.mailbox = k.mailbox AND o.verified -- identity_addresses_mailbox_idx
            WHERE w.depth < ` + linkDepth + ` AND k.mailbox <> '' AND (o.issuer, o.subject) <> (w.issuer, w.subject)),
        bounded AS (SELECT issuer, subject, depth FROM walk LIMIT ` + linkRows + `), -- the walk stops once this many are read
        linked AS (SELECT issuer, subject, min(depth) AS depth FROM bounded GROUP BY issuer, subject)
    SELECT jsonb_agg(jsonb_build_object('iss', n.issuer, 'sub', n.subject, 'email', n.email) ORDER BY n.issuer, n.subject, n.email)
    FROM (SELECT DISTINCT k.issuer, k.subject, k.email
          FROM linked l JOIN identity_addresses k ON k.issuer = l.issuer AND k.subject = l.subject AND (l.depth = 0 OR k.verified)
          UNION ALL
          SELECT '` + replaypolicy.UnfollowedIssuer + `', '', '' -- at a bound: refused, never "someone else"
          WHERE (SELECT count(*) FROM bounded) >= ` + linkRows + ` OR EXISTS (SELECT 1 FROM linked WHERE depth >= ` + linkDepth + `)) n), '[]')`
	// linkDepth is how many identities away from the request's people
	// the walk goes; one first met that far is not followed further.
	linkDepth = "8"
	// linkRows bounds the identities-by-depth the walk reads: each
	// identity it reaches is read again at each depth below linkDepth
	// (back and forth along a link), so a cluster of accounts sharing
	// verified addresses costs up to linkDepth+1 rows each. 4,000 follows
	// some 440 such accounts to the end (a few ms of index reads), where
	// 400 stopped at about 45: enough that an approver signing in with
	// dozens of colleagues' addresses could make every request of theirs
	// unapprovable.
	linkRows = "4000"
)

// peopleInto are the scan targets of peopleColumns, into r.RequesterNow
// and r.KnownAs.
func peopleInto(r *Request) []any {
	return []any{&r.RequesterNow.Issuer, &r.RequesterNow.Subject, &r.RequesterNow.Email, &r.RequesterNow.EmailVerified, &r.KnownAs}
}

// scanRequestNow scans requestColumns and peopleColumns: a request
// with its requester as the directory has them now, and the addresses the
// console has seen its people with.
func scanRequestNow(row pgx.CollectableRow) (Request, error) {
	var r Request
	return r, scanRequestInto(row, &r, peopleInto(&r)...)
}

// MayApprove says whether actor may approve r: replaypolicy.MayApprove,
// the check Approve makes, with r's requester as it recorded them and as
// the directory has them now (RequesterNow, which every read of a request
// carries), its people under every address the console has seen them
// with (KnownAs: the actor's too once r is SeenBy theirs), and actor as
// signed in and as the directory has them now (actorNow,
// Service.IdentityNow; zero when not known), as Approve judges it
// (asTheyAreNow). Pages mark a request the viewer may not approve with it,
// so that what they show is what Approve does.
func (r Request) MayApprove(actor, actorNow quarantine.Actor) replaypolicy.Verdict {
	return replaypolicy.MayApprove(policyRequest(r, nil), actor, actorNow)
}

// MayReconcile says whether actor may settle an item of r whose outcome
// nobody knows: replaypolicy.MayReconcile, the check Reconcile makes, with
// r's requester as it recorded them and as the directory has them now (as
// MayApprove, and under KnownAs, the actor's addresses too once r is
// SeenBy them), and actor as signed in and as the directory has them now
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

// One person is every name the console knows them by: each address it
// sees an identity with is kept (identity_addresses, migration 0057), at
// every sign-in and refresh (authz, with the directory) and with each
// replay action here (a draft, a submit, a payload edit, an approval, a
// rejection, a cancel, a settle), in the action's transaction, with its
// mailbox key ($4, replaypolicy.Mailbox: what links are followed by) and
// whether the provider verified it ($5; a row of its own, as the runtime
// role never updates one: only verified addresses link past a request's
// people, linkedFrom). Separation of duties compares each person of a
// request (knownAsColumn) and the actor (asSeenBy) as their identity with
// all of them.
const insertKnownAs = `INSERT INTO identity_addresses (issuer, subject, email, mailbox, verified)
    SELECT $1::text, $2::text, $3::text, $4::text, $5::boolean
    WHERE $1::text <> '' AND $2::text <> '' AND $3::text <> '' -- an identity without an address is its identity alone
    ON CONFLICT DO NOTHING -- seen with this address (so verified, or not) before`

// seen records, in tx, that the console saw actor's identity with its
// address.
func seen(ctx context.Context, tx pgx.Tx, actor quarantine.Actor) error {
	if _, err := tx.Exec(ctx, insertKnownAs, actor.Issuer, actor.Subject, actor.Email, replaypolicy.Mailbox(actor.Email),
		actor.EmailVerified); err != nil {
		return fmt.Errorf("record the address of %s: %w", actor.Attribution(), err)
	}
	return nil
}

// selectKnownAs is each address the console has seen an identity with
// (verified or not).
const selectKnownAs = `SELECT DISTINCT issuer, subject, email FROM identity_addresses WHERE issuer = $1 AND subject = $2 ORDER BY email`

// KnownAs is each address the console has seen actor's identity with (as
// quarantine.Actor values of that identity; none when never seen): the
// pages judge the viewer with them (Request.SeenBy) as the actions do.
func (s *Service) KnownAs(ctx context.Context, actor quarantine.Actor) ([]quarantine.Actor, error) {
	known, err := knownAs(ctx, s.pool, actor)
	if err != nil {
		return nil, fmt.Errorf("read the addresses of %s: %w", actor.Attribution(), err)
	}
	return known, nil
}

func knownAs(ctx context.Context, q querier, actor quarantine.Actor) ([]quarantine.Actor, error) {
	rows, err := q.Query(ctx, selectKnownAs, actor.Issuer, actor.Subject)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (quarantine.Actor, error) {
		var a quarantine.Actor
		return a, row.Scan(&a.Issuer, &a.Subject, &a.Email)
	})
}

// SeenBy is r judged with an actor whose identity the console has seen
// with the addresses known (Service.KnownAs): the rules take the actor as
// the person behind all of them, as they take r's requester and approvers
// (replaypolicy.Request.KnownAs). Every judgement of an actor on r goes
// through it: Approve, Reject and Reconcile (asSeenBy), and the pages that
// say what the viewer may do.
func (r Request) SeenBy(known []quarantine.Actor) Request {
	r.KnownAs = append(append([]quarantine.Actor(nil), r.KnownAs...), known...)
	return r
}

// asSeenBy is req judged with actor (Request.SeenBy), their addresses read
// on q.
func asSeenBy(ctx context.Context, q querier, req Request, actor quarantine.Actor) (Request, error) {
	known, err := knownAs(ctx, q, actor)
	if err != nil {
		return req, fmt.Errorf("read the addresses of %s: %w", actor.Attribution(), err)
	}
	return req.SeenBy(known), nil
}

// asTheyAreNow is req judged with actor as separation of duties takes
// them besides their session, both read on q: seen by every address of
// theirs (asSeenBy), and their identity as the directory has it now
// (actorNow; zero when never seen). Approve, Reject, Reconcile and the
// request page judge an actor with both (Request.MayApprove,
// Request.MayReconcile).
func asTheyAreNow(ctx context.Context, q querier, req Request, actor quarantine.Actor) (Request, quarantine.Actor, error) {
	actorNow, err := identityNow(ctx, q, actor)
	if err != nil {
		return req, quarantine.Actor{}, fmt.Errorf("read %s as the directory has them: %w", actor.Attribution(), err)
	}
	req, err = asSeenBy(ctx, q, req, actor)
	return req, actorNow, err
}
