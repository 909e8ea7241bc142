package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/migrations"
)

func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var dsn string
	s := newSettings("migrate", getenv, stderr)
	s.str(&dsn, "database-url", "DATABASE_URL", "", "PostgreSQL connection string", checkPostgresURL)
	if err := s.parse(args); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer conn.Close(context.Background())
	v, err := migrations.Migrate(ctx, conn)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schema at version %d\n", v)
	return nil
}
