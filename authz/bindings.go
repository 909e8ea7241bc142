package authz

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Binding gives a role in a tenant to one identity (Subject "user:iss|sub")
// or to whoever has a verified email (Subject "email:addr"). CreatedBy is
// the email claim of the admin who added it ("" when they had none);
// AuthorIssuer, AuthorSubject and AuthorEmailVerified the rest of who they
// were, nil for a binding from before migration 0046 (Author).
// UnmatchedSince is when the console stopped matching the binding (an email
// binding whose address is not ASCII, flagged by migration 0050), nil for
// one in force.
type Binding struct {
	ID                  int64      `db:"id"`
	Subject             string     `db:"subject"`
	Role                string     `db:"role"`
	Tenant              string     `db:"tenant"`
	CreatedBy           string     `db:"created_by"`
	AuthorIssuer        *string    `db:"created_by_issuer"`
	AuthorSubject       *string    `db:"created_by_subject"`
	AuthorEmailVerified *bool      `db:"created_by_email_verified"`
	CreatedAt           time.Time  `db:"created_at"`
	UnmatchedSince      *time.Time `db:"unmatched_since"`
}

// Author names who added b as every page names a person
// (quarantine.Actor.Display: an unverified email marked, no email the
// subject). A binding from before migration 0046 recorded the email alone,
// and whether it was verified is not known: it is named by it as it was.
func (b Binding) Author() string {
	if b.AuthorIssuer == nil || b.AuthorSubject == nil { // before migration 0046: the email alone
		return quarantine.RecordedAuthor("", "", b.CreatedBy, nil)
	}
	return quarantine.RecordedAuthor(*b.AuthorIssuer, *b.AuthorSubject, b.CreatedBy, b.AuthorEmailVerified)
}

// BindingInput is what an admin types to add a binding. Exactly one of
// Email and Subject (the identity's "issuer|subject") is given.
type BindingInput struct {
	Email   string
	Subject string
	Role    string
	Tenant  string
}

// Validate returns field → message for what is wrong, or nil.
func (in *BindingInput) Validate() map[string]string {
	errs := map[string]string{}
	in.Email, in.Subject = strings.TrimSpace(in.Email), strings.TrimSpace(in.Subject)
	// The tenant loses only what no subject token holds: a tenant taken
	// from a producer's subject may end in U+00A0, and the select offers
	// it as its own (strings.TrimSpace would bind another tenant).
	in.Tenant = quarantine.TrimToken(in.Tenant)
	switch {
	case in.Email == "" && in.Subject == "":
		errs["email"] = "Give an email address or an identity subject."
	case in.Email != "" && in.Subject != "":
		errs["email"] = "Give an email address or a subject, not both."
	case in.Email != "":
		if a, err := mail.ParseAddress(in.Email); err != nil || a.Address != in.Email {
			errs["email"] = "This is not an email address."
		} else if _, ok := replaypolicy.EmailKey(in.Email); !ok {
			errs["email"] = "Email bindings take addresses written in ASCII only (an internationalised domain in its xn-- form): " +
				"other letters can read as another mailbox. Bind this person's identity (issuer|subject) instead."
		}
	default:
		if !strings.Contains(in.Subject, "|") {
			errs["subject"] = "A subject is written issuer|subject, as shown on the audit page."
		}
	}
	if !ValidRole(in.Role) {
		errs["role"] = "Choose one of " + strings.Join(Roles, ", ") + "."
	}
	if !validTenant(in.Tenant) {
		errs["tenant"] = "Choose a tenant, or * for all tenants."
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// subject is the binding's Casbin subject: the identity, or the email's
// key (replaypolicy.EmailKey, as User.subjects matches it; Validate refuses
// an address without one).
func (in *BindingInput) subject() string {
	if in.Email != "" {
		key, _ := replaypolicy.EmailKey(in.Email)
		return "email:" + key
	}
	return "user:" + in.Subject
}

// Bindings stores role bindings; every change is audited in its transaction.
type Bindings struct {
	pool *pgxpool.Pool
}

// NewBindings returns the store on pool.
func NewBindings(pool *pgxpool.Pool) *Bindings { return &Bindings{pool: pool} }

// errNoBinding answers for a binding that does not exist or is not the
// caller's to see: the same answer for both.
var errNoBinding = quarantine.Errorf(quarantine.ENOTFOUND, "There is no such role binding.")

// bindingColumns are the columns of Binding.
const bindingColumns = `id, subject, role, tenant, created_by, created_by_issuer, created_by_subject, created_by_email_verified, created_at,
    unmatched_since`

const listBindings = `SELECT ` + bindingColumns + ` FROM role_bindings ORDER BY tenant, role, subject`

// List returns every binding.
func (b *Bindings) List(ctx context.Context) ([]Binding, error) {
	rows, err := b.pool.Query(ctx, listBindings)
	if err != nil {
		return nil, fmt.Errorf("list role bindings: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[Binding])
}

const insertBinding = `INSERT INTO role_bindings (subject, role, tenant, created_by, created_by_issuer, created_by_subject,
        created_by_email_verified)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    RETURNING ` + bindingColumns

// Add stores a binding made by actor (who they are, and their email claim
// with whether it was verified) and audits it. It returns an invalid
// quarantine.Error (with the field messages in its text) for bad input and
// a conflict when the same binding exists.
func (b *Bindings) Add(ctx context.Context, in BindingInput, actor User, meta audit.Event) (Binding, error) {
	if errs := in.Validate(); errs != nil {
		return Binding{}, fmt.Errorf("add role binding: %w", quarantine.Errorf(quarantine.EINVALID, "%v", errs))
	}
	var out Binding
	// One row, then the audit chain, as every change of bindings: no lock
	// race to lose, so no retry (dlq.InTx).
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, insertBinding, in.subject(), in.Role, in.Tenant, actor.Email, actor.Issuer, actor.Subject,
			actor.EmailVerified && actor.Email != "")
		if err != nil {
			return err
		}
		if out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Binding]); err != nil {
			return err
		}
		meta.Actor, meta.Action = actor.Actor, "binding.add"
		meta.ObjectType, meta.ObjectID, meta.Outcome = "role_binding", strconv.FormatInt(out.ID, 10), audit.OutcomeOK
		meta.After = out
		return auditBindingChange(ctx, tx, in.Tenant, meta)
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return Binding{}, fmt.Errorf("add role binding: %w", quarantine.Errorf(quarantine.ECONFLICT, "%s already holds %s in %s", in.subject(), in.Role, in.Tenant))
	}
	if err != nil {
		return Binding{}, fmt.Errorf("add role binding: %w", err)
	}
	return out, nil
}

const (
	getBinding    = `SELECT ` + bindingColumns + ` FROM role_bindings WHERE id = $1 FOR UPDATE`
	deleteBinding = `DELETE FROM role_bindings WHERE id = $1`
)

// Get returns binding id, or a not_found quarantine.Error.
func (b *Bindings) Get(ctx context.Context, id int64) (Binding, error) {
	rows, err := b.pool.Query(ctx, strings.TrimSuffix(getBinding, " FOR UPDATE"), id)
	if err != nil {
		return Binding{}, fmt.Errorf("get role binding %d: %w", id, err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Binding])
	if errors.Is(err, pgx.ErrNoRows) {
		return Binding{}, fmt.Errorf("get role binding %d: %w", id, errNoBinding)
	}
	return out, err
}

// Delete removes binding id if allowed(binding) says the actor may, and
// audits it. It returns a not_found quarantine.Error when there is none or
// it is not the actor's to see.
func (b *Bindings) Delete(ctx context.Context, id int64, actor User, allowed func(Binding) bool, meta audit.Event) error {
	// One row, then the audit chain (as Add).
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, getBinding, id)
		if err != nil {
			return err
		}
		old, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Binding])
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && !allowed(old)) {
			return errNoBinding
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, deleteBinding, id); err != nil {
			return err
		}
		meta.Actor, meta.Action = actor.Actor, "binding.delete"
		meta.ObjectType, meta.ObjectID, meta.Outcome = "role_binding", strconv.FormatInt(id, 10), audit.OutcomeOK
		meta.Before = old
		return auditBindingChange(ctx, tx, old.Tenant, meta)
	})
	if err != nil {
		return fmt.Errorf("delete role binding %d: %w", id, err)
	}
	return nil
}

// The tenants a binding over every tenant is audited in: those that have
// dead letters (the counter rows, which the console's scopes read as its
// tenants) and those that hold a binding of their own, read in the change's
// transaction. The counter rows are tenants x item types x classes x
// statuses, the bindings one per person and role: both small.
const selectBindingTenants = `
SELECT tenant FROM dead_letter_counts
UNION
SELECT tenant FROM role_bindings WHERE tenant <> '` + AllTenants + `'
ORDER BY 1`

// auditBindingChange appends the audit rows of a change of a binding in
// tenant, inside tx: meta in that tenant for a binding of one tenant. A
// binding over every tenant (AllTenants) gives its role in each of them as
// surely as one naming it, so its change is one row in each tenant the
// console knows (selectBindingTenants), naming only that tenant (the
// binding itself says "*"), so that the tenant's auditors find every grant
// over it; then the row outside any tenant, for auditors of every tenant.
// All are one AppendBatch, as the retention purge writes its tenants' rows
// and its own (dlq's auditPurge).
func auditBindingChange(ctx context.Context, tx pgx.Tx, tenant string, meta audit.Event) error {
	if tenant != AllTenants {
		meta.Tenant = tenant
		_, err := audit.Append(ctx, tx, meta)
		return err
	}
	rows, err := tx.Query(ctx, selectBindingTenants)
	if err != nil {
		return fmt.Errorf("read tenants: %w", err)
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("read tenants: %w", err)
	}
	events := make([]audit.Event, 0, len(tenants)+1)
	for _, t := range tenants {
		e := meta
		e.Tenant = t
		events = append(events, e)
	}
	meta.Tenant = "" // outside any tenant
	events = append(events, meta)
	_, err = audit.AppendBatch(ctx, tx, events)
	return err
}
