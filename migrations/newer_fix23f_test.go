package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestMigrateLeavesANewerSchemaAlone: on a schema a newer release left (its
// version above Newest), Migrate runs nothing and returns that version, so
// the previous release's `console migrate` does not stop a rollback
// (review 23f).
func TestMigrateLeavesANewerSchemaAlone(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	newest, err := migrations.Newest()
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, db.OwnerURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `UPDATE `+migrations.VersionTable+` SET version = $1`, newest+1)
	require.NoError(t, err)

	v, err := migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	assert.Equal(t, newest+1, v)
	var recorded int32
	require.NoError(t, conn.QueryRow(ctx, `SELECT version FROM `+migrations.VersionTable).Scan(&recorded))
	assert.Equal(t, newest+1, recorded, "the newer schema's version is left as it is")
	have, want, err := migrations.CheckVersion(ctx, conn)
	require.NoError(t, err, "serve and worker accept it")
	assert.Equal(t, newest+1, have)
	assert.Equal(t, newest, want)
}
