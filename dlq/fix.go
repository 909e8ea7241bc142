package dlq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// A fix marker is an on-call's audited statement that a fix was in place
// from a moment on: "fixed at <time>: <version or ticket>", for an item
// type of a tenant, or for one error group of it. The replay rules let a
// schema_invalid or permanent dead letter go once a fix later than it is
// recorded (replaypolicy.JudgeItem). Markers are never changed or deleted.

// FixScope is what a fix marker covers.
type FixScope string

// Fix scopes.
const (
	FixItemType FixScope = "item_type" // every dead letter of the item type in the tenant
	FixGroup    FixScope = "group"     // the dead letters of one error group of it
)

// Bounds of what a person writes on a fix marker.
const (
	MaxFixRef  = 200  // bytes of the version or ticket
	MaxFixNote = 2000 // bytes of the note
	// MaxFixAhead is how far past now a fix may be said to be in place:
	// clocks differ, a fix of tomorrow is a mistake.
	MaxFixAhead = 5 * time.Minute
)

// FixInput is a fix marker as a person states it. Which tenant and item
// type (and error group) it is for comes from a dead letter, never from
// the form.
type FixInput struct {
	Scope   FixScope
	FixedAt time.Time // when the fix was in place
	Ref     string    // version or ticket: "v1.4.2", "OPS-1234"
	Note    string
}

// Validate returns a message per bad field ("scope", "fixed_at", "ref",
// "note"), or nil. now is the clock.
func (in FixInput) Validate(now time.Time) map[string]string {
	errs := map[string]string{}
	if in.Scope != FixItemType && in.Scope != FixGroup {
		errs["scope"] = "Choose the item type or the error group."
	}
	switch {
	case in.FixedAt.IsZero():
		errs["fixed_at"] = "Say when the fix was in place."
	case in.FixedAt.After(now.Add(MaxFixAhead)):
		errs["fixed_at"] = "A fix cannot be in place in the future."
	}
	switch ref := strings.TrimSpace(in.Ref); {
	case ref == "":
		errs["ref"] = "Name the version or the ticket of the fix."
	case len(ref) > MaxFixRef:
		errs["ref"] = fmt.Sprintf("At most %d bytes of text.", MaxFixRef)
	case !StorableText(ref):
		errs["ref"] = UnstorableTextMessage
	}
	switch {
	case len(in.Note) > MaxFixNote:
		errs["note"] = fmt.Sprintf("At most %d bytes of text.", MaxFixNote)
	case !StorableText(in.Note):
		errs["note"] = UnstorableTextMessage
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// Fix is a recorded fix marker. ByIssuer, BySubject and ByEmail are who
// recorded it (ByEmail their email claim, "" when they had none);
// ByEmailVerified whether the provider verified it, nil for a marker from
// before migration 0049 (Author).
type Fix struct {
	ID              int64     `db:"id"`
	Tenant          string    `db:"tenant"`
	ItemType        string    `db:"item_type"`
	Fingerprint     string    `db:"fingerprint"` // "" for every group of the item type
	FixedAt         time.Time `db:"fixed_at"`
	Ref             string    `db:"fix_ref"`
	Note            string    `db:"note"`
	ByIssuer        string    `db:"created_by_issuer"`
	BySubject       string    `db:"created_by_subject"`
	ByEmail         string    `db:"created_by_email"`
	ByEmailVerified *bool     `db:"created_by_email_verified"`
	CreatedAt       time.Time `db:"created_at"`
}

// Author names who recorded f as every page names a person
// (quarantine.Actor.Display: an unverified email marked, no email the
// subject). A marker from before migration 0049 did not record whether its
// email was verified: it is named by the email as it was, else the subject.
func (f Fix) Author() string {
	return quarantine.RecordedAuthor(f.ByIssuer, f.BySubject, f.ByEmail, f.ByEmailVerified)
}

// fixColumns are the columns of Fix.
const fixColumns = `id, tenant, item_type, fingerprint, fixed_at, fix_ref, note, created_by_issuer, created_by_subject, created_by_email,
        created_by_email_verified, created_at`

const (
	insertFix = `INSERT INTO fix_markers (tenant, item_type, fingerprint, fixed_at, fix_ref, note,
        created_by_issuer, created_by_subject, created_by_email, created_by_email_verified)
        SELECT d.tenant, d.item_type, CASE WHEN $2 THEN d.fingerprint ELSE '' END, $3, $4, $5, $6, $7, $8, $9
        FROM dead_letters d WHERE d.id = $1
        RETURNING ` + fixColumns
	// The fixes that cover a dead letter: of its item type, or of its
	// error group, in its tenant; the newest first.
	selectFixesFor = `SELECT m.id, m.tenant, m.item_type, m.fingerprint, m.fixed_at, m.fix_ref, m.note, m.created_by_issuer, m.created_by_subject,
            m.created_by_email, m.created_by_email_verified, m.created_at
        FROM dead_letters d JOIN fix_markers m ON m.tenant = d.tenant AND m.item_type = d.item_type AND m.fingerprint IN ('', d.fingerprint)
        WHERE d.id = $1 AND d.dead_lettered_at >= $3 AND d.dead_lettered_at < $4 -- the partitions the map names
        ORDER BY m.fixed_at DESC, m.id DESC LIMIT $2`
)

// RecordFix records that a fix was in place, for the item type (or the
// error group) of dead letter id, by actor (who they are, and their email
// claim with whether it was verified), audited in the same transaction with the
// dead letter's tenant. It returns invalid for bad input (see Validate) and
// not_found for a missing dead letter; the route checked the tenant.
func (s *Store) RecordFix(ctx context.Context, id int64, in FixInput, actor quarantine.Actor, meta quarantine.RequestMeta, now time.Time) (Fix, error) {
	in.Ref, in.Note = strings.TrimSpace(in.Ref), strings.TrimSpace(in.Note)
	if errs := in.Validate(now); errs != nil {
		return Fix{}, fmt.Errorf("record fix: %w", quarantine.Errorf(quarantine.EINVALID, "%s", firstError(errs)))
	}
	var f Fix
	// A new row (the dead letter is only read), then the audit chain: no
	// lock race to lose (pgx.BeginFunc, not InTx).
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, insertFix, id, in.Scope == FixGroup, in.FixedAt, in.Ref, in.Note, actor.Issuer, actor.Subject, actor.Email,
			actor.EmailVerified && actor.Email != "")
		if err != nil {
			return err
		}
		f, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Fix])
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoDeadLetter
		}
		if err != nil {
			return err
		}
		e := audit.NewEvent(actor, meta, audit.ActionDeadLetterFix)
		e.Tenant, e.ObjectType, e.ObjectID, e.Reason = f.Tenant, "fix_marker", strconv.FormatInt(f.ID, 10), in.Note
		e.After = map[string]any{"item_type": f.ItemType, "group": f.Fingerprint, "fixed_at": f.FixedAt.UTC().Format(time.RFC3339),
			"ref": f.Ref, "dead_letter": id}
		_, err = audit.Append(ctx, tx, e)
		return err
	})
	if err != nil {
		return Fix{}, fmt.Errorf("record fix for dead letter %d: %w", id, err)
	}
	return f, nil
}

// QueueFixesFor queues into b (a page's round trip) the read of up to
// limit fixes that cover dead letter id (its dead_lettered_at in [lo, hi)),
// the one in place last first; *out holds them once b has run.
func QueueFixesFor(b *pgx.Batch, id int64, lo, hi time.Time, limit int, out *[]Fix) {
	b.Queue(selectFixesFor, id, limit, lo, hi).Query(func(rows pgx.Rows) error {
		var err error
		*out, err = pgx.CollectRows(rows, pgx.RowToStructByName[Fix])
		return err
	})
}

// StorableText reports whether s can be stored as PostgreSQL text: UTF-8
// without a NUL byte. A browser sends nothing else from a text field; a
// client that does gets UnstorableTextMessage at the field, never a
// statement that fails.
func StorableText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// UnstorableTextMessage is what a field that is not StorableText says.
const UnstorableTextMessage = "Text only: no NUL characters, and valid UTF-8."

// firstError is the message of the first bad field, in form order.
func firstError(errs map[string]string) string {
	for _, k := range []string{"scope", "fixed_at", "ref", "note"} {
		if m, ok := errs[k]; ok {
			return m
		}
	}
	return ""
}
