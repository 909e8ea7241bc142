package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
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

// selectPersonNow is an identity as the directory has it now.
const selectPersonNow = `SELECT issuer, subject, email, email_verified FROM user_directory WHERE issuer = $1 AND subject = $2`

// personNow returns who as the directory has them now, zero when it never
// saw them.
func personNow(ctx context.Context, q querier, who quarantine.Actor) (quarantine.Actor, error) {
	var a quarantine.Actor
	err := q.QueryRow(ctx, selectPersonNow, who.Issuer, who.Subject).Scan(&a.Issuer, &a.Subject, &a.Email, &a.EmailVerified)
	if errors.Is(err, pgx.ErrNoRows) {
		return quarantine.Actor{}, nil
	}
	if err != nil {
		return quarantine.Actor{}, fmt.Errorf("read the directory entry of %s: %w", who.Attribution(), err)
	}
	return a, nil
}

// requesterNow sets req.RequesterNow from the directory.
func requesterNow(ctx context.Context, q querier, req *Request) error {
	now, err := personNow(ctx, q, req.Requester)
	req.RequesterNow = now
	return err
}
