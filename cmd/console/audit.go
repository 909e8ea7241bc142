package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/audit"
)

// runAudit runs "console audit verify": it walks the hash chain, prints the
// result with the head hash, and exits 1 naming the first bad seq.
func runAudit(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		fmt.Fprintln(stderr, "usage: console audit verify [--database-url URL]")
		return errUsage
	}
	var dsn string
	s := newSettings("audit verify", getenv, stderr)
	s.str(&dsn, "database-url", "DATABASE_URL", "", "PostgreSQL connection string", checkPostgresURL)
	if err := s.parse(args[1:]); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer conn.Close(context.Background())
	res, err := audit.Verify(ctx, conn)
	if err != nil {
		return fmt.Errorf("verify audit chain: %w", err)
	}
	fmt.Fprintln(stdout, res.String())
	return res.Err()
}
