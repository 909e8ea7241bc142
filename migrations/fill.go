package migrations

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Rows of identity_addresses without their mailbox key: those written
// before migration 0059, which SQL cannot key (Unicode forms, IDNA, case
// folding), a bounded batch at a time.
const (
	selectUnkeyed = `SELECT DISTINCT email FROM identity_addresses WHERE mailbox IS NULL ORDER BY email LIMIT 1000`
	setMailbox    = `UPDATE identity_addresses SET mailbox = $2 WHERE email = $1 AND mailbox IS NULL`
)

// fillMailboxes writes replaypolicy.Mailbox of each address kept before
// migration 0059 beside it (identity_addresses.mailbox): the key the
// console follows links between identities by. Until it has run, an old
// row links nothing, so `console migrate` runs it after every migration
// and before it reports the schema done; it changes nothing once every row
// has its key (the console writes it with each new row).
func fillMailboxes(ctx context.Context, conn *pgx.Conn) error {
	for {
		rows, err := conn.Query(ctx, selectUnkeyed)
		if err != nil {
			return fmt.Errorf("read addresses without a mailbox key: %w", err)
		}
		emails, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("read addresses without a mailbox key: %w", err)
		}
		if len(emails) == 0 {
			return nil
		}
		b := &pgx.Batch{}
		for _, e := range emails {
			b.Queue(setMailbox, e, replaypolicy.Mailbox(e))
		}
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("write mailbox keys: %w", err)
		}
	}
}
