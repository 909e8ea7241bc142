package main

import (
	"context"
	"fmt"
	"io"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/migrations"
)

// runMigrate is "console migrate": it applies the migrations as the owner of
// the schema (MIGRATE_DATABASE_URL), the one role allowed DDL. serve and
// worker connect as the runtime role and only check the version. On a schema
// newer than this release's migrations (a rollback: the newer release
// migrated it) it runs nothing, says so and exits 0, as serve and worker
// accept that schema.
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
	newest, err := migrations.Newest()
	if err != nil {
		return err
	}
	if v > newest {
		fmt.Fprintf(stdout, "schema at version %d, newer than this release's %d: nothing to do\n", v, newest)
		return nil
	}
	fmt.Fprintf(stdout, "schema at version %d\n", v)
	return nil
}
