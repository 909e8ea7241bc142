package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

func TestMigrateIsIdempotentAndReversible(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	all, err := migrations.All()
	require.NoError(t, err)

	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer conn.Close(ctx)

	// The template is already migrated: running again changes nothing.
	v, err := migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, int32(len(all)), v)

	// Every down file undoes its up file, in reverse order.
	for i := len(all) - 1; i >= 0; i-- {
		require.NotEmpty(t, all[i].Down, "migration %04d has no down file", all[i].Number)
		_, err := conn.Exec(ctx, all[i].Down)
		require.NoError(t, err, "down %04d_%s", all[i].Number, all[i].Name)
	}
	var tables int
	require.NoError(t, conn.QueryRow(ctx,
		`SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> $1`, migrations.VersionTable).Scan(&tables))
	require.Zero(t, tables, "tables left after all down migrations")
}
