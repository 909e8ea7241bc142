package migrations

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

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
	setMailbox = `UPDATE identity_addresses SET mailbox = $5 WHERE issuer = $1 AND subject = $2 AND email = $3 AND verified = $4`
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
// console writes it with each new row). A row an older console writes
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
		b := &pgx.Batch{}
		for _, k := range keys {
			if box := replaypolicy.Mailbox(k.Email); k.Mailbox == nil || *k.Mailbox != box {
				b.Queue(setMailbox, k.Issuer, k.Subject, k.Email, k.Verified, box)
			}
		}
		if b.Len() > 0 {
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				return fmt.Errorf("write mailbox keys: %w", err)
			}
		}
		last := keys[len(keys)-1]
		q, args = selectKeysAfter, []any{last.Issuer, last.Subject, last.Email, last.Verified}
	}
}
