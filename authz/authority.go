package authz

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine"
)

// Directory remembers the last identity and groups each person signed in
// with, so that checks made when nobody is signed in (a replay worker
// re-checking its requester and approvers) see their roles.
type Directory struct {
	pool *pgxpool.Pool
}

// NewDirectory returns the directory on pool.
func NewDirectory(pool *pgxpool.Pool) *Directory { return &Directory{pool: pool} }

// Remember records u as seen now. A person the provider gives no groups is
// remembered with none.
func (d *Directory) Remember(ctx context.Context, u User) error {
	if u.Groups == nil {
		u.Groups = []string{}
	}
	_, err := d.pool.Exec(ctx, `INSERT INTO user_directory (issuer, subject, email, email_verified, name, groups, seen_at)
        VALUES ($1, $2, $3, $4, $5, $6, now())
        ON CONFLICT (issuer, subject) DO UPDATE SET email = excluded.email, email_verified = excluded.email_verified,
            name = excluded.name, groups = excluded.groups, seen_at = excluded.seen_at`,
		u.Issuer, u.Subject, u.Email, u.EmailVerified, u.Name, u.Groups)
	if err != nil {
		return fmt.Errorf("remember %s: %w", u.Email, err)
	}
	return nil
}

// Lookup returns the person as last seen, or a not_found quarantine.Error.
func (d *Directory) Lookup(ctx context.Context, issuer, subject string) (User, error) {
	u := User{Actor: quarantine.Actor{Issuer: issuer, Subject: subject}}
	err := d.pool.QueryRow(ctx, `SELECT email, email_verified, name, groups FROM user_directory WHERE issuer = $1 AND subject = $2`,
		issuer, subject).Scan(&u.Email, &u.EmailVerified, &u.Name, &u.Groups)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, fmt.Errorf("user %s|%s: %w", issuer, subject, quarantine.Errorf(quarantine.ENOTFOUND, "%s has never signed in", issuer+"|"+subject))
	}
	return u, err
}

// Authority answers replay.Authority from the directory and the current
// policy: roles from groups as of the person's last sign-in, and bindings
// and permissions as they are now.
type Authority struct {
	Access    *Access
	Directory *Directory
}

// StillAllowed reports whether who may do action on object in tenant now.
// Someone never seen is not allowed.
func (a Authority) StillAllowed(ctx context.Context, who quarantine.Actor, tenant, object, action string) (bool, error) {
	u, err := a.Directory.Lookup(ctx, who.Issuer, who.Subject)
	if quarantine.ErrorCode(err) == quarantine.ENOTFOUND {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return a.Access.Can(u, tenant, object, action), nil
}
