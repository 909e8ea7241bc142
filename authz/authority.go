package authz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Directory remembers the last identity and groups each person signed in
// with, so that checks made when nobody is signed in (a replay worker
// re-checking its requester and approvers) see their roles.
type Directory struct {
	pool *pgxpool.Pool
}

// NewDirectory returns the directory on pool.
func NewDirectory(pool *pgxpool.Pool) *Directory { return &Directory{pool: pool} }

// A sign-in or a refresh the provider vouched for: the person as seen now,
// no longer revoked; and the address it comes with kept among every one
// the console has seen the identity with (identity_addresses, never
// removed: separation of duties compares a person as all of them, so an
// address given up to another identity of theirs still names them), with
// its mailbox key ($7, replaypolicy.Mailbox) and whether the provider
// verified it (a row of its own: links beyond a request follow only
// verified addresses).
const rememberUser = `WITH seen AS (
        INSERT INTO identity_addresses (issuer, subject, email, verified, mailbox)
        SELECT $1::text, $2::text, $3::text, $4::boolean, $7::text WHERE $3::text <> '' -- an identity without an address is its identity alone
        ON CONFLICT DO NOTHING)
    INSERT INTO user_directory (issuer, subject, email, email_verified, name, groups, seen_at)
    VALUES ($1, $2, $3, $4, $5, $6, now())
    ON CONFLICT (issuer, subject) DO UPDATE SET email = excluded.email, email_verified = excluded.email_verified,
        name = excluded.name, groups = excluded.groups, seen_at = excluded.seen_at,
        revoked_at = NULL, revoked_reason = ''`

// Remember records u as seen now (and no longer revoked). A person the
// provider gives no groups is remembered with none.
func (d *Directory) Remember(ctx context.Context, u User) error {
	return rememberIn(ctx, d.pool, u)
}

// execer runs a statement: a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// rememberIn records u as seen now on db, which may be the transaction of
// the sign-in or refresh that vouched for them.
func rememberIn(ctx context.Context, db execer, u User) error {
	if u.Groups == nil {
		u.Groups = []string{}
	}
	_, err := db.Exec(ctx, rememberUser, u.Issuer, u.Subject, u.Email, u.EmailVerified, u.Name, u.Groups, replaypolicy.Mailbox(u.Email))
	if err != nil {
		return fmt.Errorf("remember %s: %w", u.Email, err)
	}
	return nil
}

// Marks a person revoked and forgets their groups; a person never seen has
// no entry to mark (and no rights to lose). The first reason stays.
const revokeDirectoryEntry = `UPDATE user_directory
    SET groups = '{}', revoked_at = coalesce(revoked_at, now()),
        revoked_reason = CASE WHEN revoked_at IS NULL THEN $3 ELSE revoked_reason END
    WHERE issuer = $1 AND subject = $2`

// revokeEntry marks issuer|subject revoked in the caller's transaction: an
// admin ended their sessions, or the provider refused to refresh one.
// Until they sign in again, checks made when nobody is signed in (a replay
// worker's) find no right at all (Authority).
func revokeEntry(ctx context.Context, tx pgx.Tx, issuer, subject, reason string) error {
	if _, err := tx.Exec(ctx, revokeDirectoryEntry, issuer, subject, clip(reason, 500)); err != nil {
		return fmt.Errorf("revoke directory entry: %w", err)
	}
	return nil
}

// Entry is a person as the directory last saw them.
type Entry struct {
	User
	// SeenAt is their last sign-in or refresh.
	SeenAt time.Time
	// RevokedAt is when their sessions were ended by an admin or by a
	// refused refresh, since their last sign-in; zero when not.
	RevokedAt     time.Time
	RevokedReason string
	// readAt is the database's clock when the entry was read: SeenAt is
	// dated by it.
	readAt time.Time
	// accessVersion is the authorization policy's version, read with the
	// entry (Access.atLeast).
	accessVersion int64
}

const selectEntry = `SELECT email, email_verified, name, groups, seen_at, revoked_at, revoked_reason,
        COALESCE((SELECT version FROM access_version), 0), now()
    FROM user_directory WHERE issuer = $1 AND subject = $2`

// Lookup returns the person as last seen, or a not_found quarantine.Error.
func (d *Directory) Lookup(ctx context.Context, issuer, subject string) (Entry, error) {
	e := Entry{User: User{Actor: quarantine.Actor{Issuer: issuer, Subject: subject}}}
	var revoked *time.Time
	err := d.pool.QueryRow(ctx, selectEntry, issuer, subject).
		Scan(&e.Email, &e.EmailVerified, &e.Name, &e.Groups, &e.SeenAt, &revoked, &e.RevokedReason, &e.accessVersion, &e.readAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Entry{}, fmt.Errorf("user %s|%s: %w", issuer, subject, quarantine.Errorf(quarantine.ENOTFOUND, "%s has never signed in", issuer+"|"+subject))
	}
	if err != nil {
		return Entry{}, fmt.Errorf("look up %s|%s: %w", issuer, subject, err)
	}
	if revoked != nil {
		e.RevokedAt = *revoked
	}
	return e, nil
}

// DefaultDirectoryMaxAge is how old the provider's word about a person may
// be for checks made when nobody is signed in, when Authority.MaxAge is not
// set: the default session lifetime (SESSION_LIFETIME).
const DefaultDirectoryMaxAge = 12 * time.Hour

// Authority answers replay.Authority from the directory and the current
// policy: whether a person still holds a permission when nobody is signed
// in.
type Authority struct {
	Access    *Access
	Directory *Directory
	// MaxAge is how old a directory entry may be for what the provider said
	// (groups, and the email that email bindings match) to count: the
	// session lifetime, since no session could have confirmed it since.
	// Default DefaultDirectoryMaxAge.
	MaxAge time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// StillAllowed reports whether who may do action on object in tenant now.
// Someone never seen is not allowed; nor is someone whose entry is revoked
// (an admin ended their sessions, or the provider refused to refresh one,
// and they have not signed in since), whatever their bindings say: their
// past approvals and requests are not vouched for. From an entry older
// than MaxAge only what is bound to the identity itself (a user:<issuer>|
// <subject> binding) counts: its groups and email are the provider's word
// from longer ago than any session lasts.
func (a Authority) StillAllowed(ctx context.Context, who quarantine.Actor, tenant, object, action string) (bool, error) {
	ok, _, err := a.StillAllowedUntil(ctx, who, tenant, object, action)
	return ok, err
}

// StillAllowedUntil is StillAllowed, and when the yes rests on the
// provider's word (groups, email), which lapses once the entry is MaxAge
// old, the time on the authority's clock (Clock) when it does; zero when
// nothing of it lapses (the entry is that old already, a binding to the
// identity itself says yes too, or the answer is no).
//
// The entry's age is measured at the later of the authority's clock and
// the database's, which dated it: a worker whose clock runs behind the
// database's would otherwise count groups past their lifetime by its skew
// (TestRevGov18WorkerBehindTheDatabaseClockCountsALapsedEntry); one whose
// clock runs ahead counts them for less. So skew can only take a right
// away, as with approvals (replay.Service.judgedAt).
func (a Authority) StillAllowedUntil(ctx context.Context, who quarantine.Actor, tenant, object, action string) (bool, time.Time, error) {
	e, err := a.Directory.Lookup(ctx, who.Issuer, who.Subject)
	if quarantine.ErrorCode(err) == quarantine.ENOTFOUND {
		return false, time.Time{}, nil
	}
	if err != nil {
		return false, time.Time{}, err
	}
	if !e.RevokedAt.IsZero() {
		return false, time.Time{}, nil
	}
	maxAge := a.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultDirectoryMaxAge
	}
	u, own := e.User, e.User
	own.Groups, own.Email, own.EmailVerified = nil, "", false // what is bound to the identity itself
	local := a.Clock()
	ahead := max(e.readAt.Sub(local), 0)       // how far the database's clock runs ahead of this one
	lapses := e.SeenAt.Add(maxAge).Add(-ahead) // on this clock
	if !local.Before(lapses) {                 // MaxAge old: the provider's word is too old
		u, lapses = own, time.Time{}
	}
	// A binding removed a moment ago counts as removed, whether or not
	// this process's listener heard of it yet.
	if err := a.Access.atLeast(e.accessVersion); err != nil {
		return false, time.Time{}, err
	}
	if !a.Access.Can(u, tenant, object, action) {
		return false, time.Time{}, nil
	}
	if !lapses.IsZero() && a.Access.Can(own, tenant, object, action) {
		lapses = time.Time{} // the yes does not rest on the provider's word
	}
	return true, lapses, nil
}

// Clock is the authority's time now (Now, default time.Now).
func (a Authority) Clock() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
