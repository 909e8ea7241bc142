package migrations

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Each address of identity_addresses with the mailbox key stored beside it,
// a bounded batch at a time in primary key order (identity_addresses_pkey):
// the first batch, then the one after the last row read ($1 to $4).
const (
	selectKeysFirst = `SELECT issuer, subject, email, verified, mailbox FROM identity_addresses
    ORDER BY issuer, subject, email, verified LIMIT 1000`
	selectKeysAfter = `SELECT issuer, subject, email, verified, mailbox FROM identity_addresses
    WHERE (issuer, subject, email, verified) > ($1, $2, $3, $4)
    ORDER BY issuer, subject, email, verified LIMIT 1000`
	// The addresses given ($1 to $4, by primary key) keyed $5, each.
	setMailboxes = `UPDATE identity_addresses a SET mailbox = u.mailbox
    FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::text[]) AS u(issuer, subject, email, verified, mailbox)
    WHERE (a.issuer, a.subject, a.email, a.verified) = (u.issuer, u.subject, u.email, u.verified)
      AND a.mailbox IS DISTINCT FROM u.mailbox -- one another migrate keyed since it was read is neither written nor audited twice`
	// Who holds each of the mailboxes $1: each identity once, and whether
	// any of its addresses there is verified (only those link past a
	// request's people).
	selectMailboxHolders = `SELECT mailbox, issuer, subject, bool_or(verified) FROM identity_addresses
    WHERE mailbox = ANY($1) GROUP BY mailbox, issuer, subject ORDER BY mailbox, issuer, subject`
)

// storedKey is a row of identity_addresses with its stored key (nil: none).
type storedKey struct {
	Issuer, Subject, Email string
	Verified               bool
	Mailbox                *string
}

// fillMailboxes writes replaypolicy.Mailbox of each address kept beside
// it (identity_addresses.mailbox), the key the console follows links
// between identities by, wherever the stored one is missing or another:
// rows kept before migration 0059, which SQL cannot key (Unicode forms,
// IDNA, case folding), and rows keyed by an earlier release's Mailbox
// (before Gmail's dots and googlemail.com were read as one mailbox). Until
// then an old row links nothing, or links by a key the rules no longer
// compare with, so `console migrate` runs it after every migration and
// before it reports the schema done. It reads every row once, a bounded
// batch at a time, and changes nothing once each key is Mailbox's (the
// console writes it with each new row). A batch with keys to write writes
// them in one transaction with its audit entry (rekeyMailboxes); a run
// with nothing to write appends nothing. A row an older console writes
// meanwhile, behind the batch being read, keeps its key until the next
// `console migrate`.
func fillMailboxes(ctx context.Context, conn *pgx.Conn) error {
	q, args := selectKeysFirst, []any(nil)
	for {
		rows, err := conn.Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("read mailbox keys: %w", err)
		}
		keys, err := pgx.CollectRows(rows, pgx.RowToStructByName[storedKey])
		if err != nil {
			return fmt.Errorf("read mailbox keys: %w", err)
		}
		if len(keys) == 0 {
			return nil
		}
		var stale []storedKey
		for _, k := range keys {
			if box := replaypolicy.Mailbox(k.Email); k.Mailbox == nil || *k.Mailbox != box {
				stale = append(stale, storedKey{Issuer: k.Issuer, Subject: k.Subject, Email: k.Email, Verified: k.Verified, Mailbox: &box})
			}
		}
		if len(stale) > 0 {
			if err := rekeyMailboxes(ctx, conn, stale); err != nil {
				return err
			}
		}
		last := keys[len(keys)-1]
		q, args = selectKeysAfter, []any{last.Issuer, last.Subject, last.Email, last.Verified}
	}
}

// migrateActor is who the audit entries of `console migrate` name: the
// command itself, as retention names its runs ("retention"); it has no
// person to name.
var migrateActor = quarantine.Actor{Subject: "migrate"}

// rekeyMailboxes writes each of keys (at most a batch of fillMailboxes,
// each with its new Mailbox) in one transaction, and appends to the audit
// log, in it, one audit.ActionIdentityRekeyed entry: how many addresses it
// keyed, and the mailboxes that now link identities they did not
// (linkedBy). Re-keying joins identities into one person for separation
// of duties, as every other change to the links is audited. When none
// needed writing any more (another `console migrate` wrote them since
// they were read), it appends nothing. The owner may append: the entry
// takes the chain's lock like any other (audit.Append), after the writes.
func rekeyMailboxes(ctx context.Context, conn *pgx.Conn, keys []storedKey) error {
	var issuers, subjects, emails, boxes []string
	var verified []bool
	for _, k := range keys {
		issuers, subjects, emails, verified = append(issuers, k.Issuer), append(subjects, k.Subject), append(emails, k.Email), append(verified, k.Verified)
		boxes = append(boxes, *k.Mailbox)
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		before, err := mailboxHolders(ctx, tx, boxes)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, setMailboxes, issuers, subjects, emails, verified, boxes)
		if err != nil {
			return fmt.Errorf("write mailbox keys: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		after, err := mailboxHolders(ctx, tx, boxes)
		if err != nil {
			return err
		}
		links, listed := linkedBy(before, after)
		if _, err := audit.Append(ctx, tx, audit.Event{
			Actor: migrateActor, Action: audit.ActionIdentityRekeyed, Outcome: audit.OutcomeOK,
			ObjectType: "identity_addresses", ObjectID: "mailbox",
			Reason: fmt.Sprintf("console migrate keyed %d kept addresses again by this release's mailbox rule (replaypolicy.Mailbox), by which separation of duties links identities into one person; mailboxes that now link identities they did not link before: %d (after lists the first %d)",
				tag.RowsAffected(), links, len(listed)),
			After: map[string]any{"addresses": tag.RowsAffected(), "mailboxes_linking": links, "linked": listed},
		}); err != nil {
			return fmt.Errorf("audit the mailbox keys written: %w", err)
		}
		return nil
	})
}

// holder is an identity holding a mailbox (issuer and subject), and
// whether any of its addresses there is verified.
type holder struct {
	Issuer, Subject string
	Verified        bool
}

// name is how an audit entry names h: "issuer|subject", with
// " (unverified)" after it when none of its addresses there is verified.
func (h holder) name() string {
	if !h.Verified {
		return h.Issuer + "|" + h.Subject + " (unverified)"
	}
	return h.Issuer + "|" + h.Subject
}

// holders are, by mailbox, the identities holding it.
type holders map[string][]holder

// mailboxHolders reads who holds each of boxes, in tx.
func mailboxHolders(ctx context.Context, tx pgx.Tx, boxes []string) (holders, error) {
	rows, err := tx.Query(ctx, selectMailboxHolders, boxes)
	if err != nil {
		return nil, fmt.Errorf("read mailbox holders: %w", err)
	}
	out := holders{}
	var box string
	var h holder
	_, err = pgx.ForEachRow(rows, []any{&box, &h.Issuer, &h.Subject, &h.Verified}, func() error {
		out[box] = append(out[box], h)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read mailbox holders: %w", err)
	}
	return out, nil
}

// Bounds on what an audit entry of rekeyMailboxes lists: the first
// maxLinkedListed mailboxes that now link identities, each with at most
// maxHoldersListed of the identities that joined it and of those that
// held it before (its count says how many hold it).
const (
	maxLinkedListed  = 10
	maxHoldersListed = 10
)

// linked is a mailbox that links identities it did not before a re-keying,
// as its audit entry lists it.
type linked struct {
	Mailbox string   `json:"mailbox"`
	Joined  []string `json:"joined"`     // identities keyed to it now, not before (at most maxHoldersListed)
	Already []string `json:"already"`    // identities that held it before (at most maxHoldersListed)
	Count   int      `json:"identities"` // identities holding it now
}

// linkedBy returns how many mailboxes link, after, identities they did
// not link before: held by two identities or more, one of them new to it
// (whether or not its address there is verified: the walk from a
// request's own people follows either), and the first maxLinkedListed of
// them, in mailbox order.
func linkedBy(before, after holders) (int, []linked) {
	boxes := make([]string, 0, len(after))
	for box := range after {
		boxes = append(boxes, box)
	}
	slices.Sort(boxes)
	n, listed := 0, []linked{}
	for _, box := range boxes {
		was := map[[2]string]bool{}
		for _, h := range before[box] {
			was[[2]string{h.Issuer, h.Subject}] = true
		}
		joined, already := []string{}, []string{}
		for _, h := range after[box] {
			if was[[2]string{h.Issuer, h.Subject}] {
				already = append(already, h.name())
			} else {
				joined = append(joined, h.name())
			}
		}
		if len(joined) == 0 || len(after[box]) < 2 {
			continue
		}
		n++
		if len(listed) < maxLinkedListed {
			listed = append(listed, linked{Mailbox: box, Joined: joined[:min(len(joined), maxHoldersListed)],
				Already: already[:min(len(already), maxHoldersListed)], Count: len(after[box])})
		}
	}
	return n, listed
}
