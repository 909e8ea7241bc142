package main

import (
	"context"
	"fmt"
	"io"

	"github.com/quarantine-console/quarantine/app"
)

// runMigrate is "console migrate": it applies the migrations as the owner of
// the schema (MIGRATE_DATABASE_URL), the one role allowed DDL. serve and
// worker connect as the runtime role and only check the version.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var dsn string
	s := newSettings("migrate", getenv, stderr)
	s.str(&dsn, "database-url", "MIGRATE_DATABASE_URL", "", "PostgreSQL connection string of the role that owns the schema (not the runtime role of DATABASE_URL)", checkPostgresURL)
	if err := s.parse(args); err != nil {
		return err
	}
	v, err := app.MigrateAsOwner(ctx, dsn)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schema at version %d\n", v)
	return nil
}
