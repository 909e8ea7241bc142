package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev39MigrationRefusesPartitionsOffTheirDays: migration 0074 does not
// run on an install whose day partitions were made off their days (over a
// session whose DateStyle and TimeZone printed midnight UTC as another
// time) and hold dead letters: its new maker's next day would overlap the
// last of them, and the keeper and ingest of that day would stop. It names them, changes
// nothing (the version stays 73), and runs once they are re-partitioned
// as the runbook says.
func TestRev39MigrationRefusesPartitionsOffTheirDays(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 73)
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -200)
	name := "dead_letters_p" + day.Format("20060102")
	// Made by 0073's maker over such a session.
	_, err := conn.Exec(ctx, `SET datestyle = 'SQL, DMY'; SET timezone = 'Asia/Kolkata'`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SELECT quarantine_dead_letter_partitions($1)`, []time.Time{day.Add(12 * time.Hour)})
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `RESET datestyle; RESET timezone`)
	require.NoError(t, err)
	testfactory.DeadLetters(t, db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", At: day.Add(12 * time.Hour)})

	_, err = migrations.Migrate(ctx, conn)
	require.Error(t, err)
	assert.Contains(t, err.Error(), name)
	assert.Contains(t, err.Error(), "do not hold their UTC days")
	var version int32
	require.NoError(t, conn.QueryRow(ctx, `SELECT version FROM `+migrations.VersionTable).Scan(&version))
	assert.EqualValues(t, 73, version, "nothing changed")

	// The runbook's repair, over an ordinary session: the day made again
	// holds its day, and the migration runs.
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `CREATE TEMP TABLE keep ON COMMIT DROP AS SELECT * FROM `+name)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `DROP TABLE `+name)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT quarantine_dead_letter_partitions($1)`, []time.Time{day.Add(12 * time.Hour)})
	require.NoError(t, err)
	tag, err := tx.Exec(ctx, `INSERT INTO dead_letters OVERRIDING SYSTEM VALUE SELECT * FROM keep`)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected(), "the dead letter is back")
	require.NoError(t, tx.Commit(ctx))
	v, err := migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	newest, err := migrations.Newest()
	require.NoError(t, err)
	assert.Equal(t, newest, v)
	var bounded bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT quarantine_dead_letter_partition_bounded($1)`, name).Scan(&bounded))
	assert.True(t, bounded)
}

// TestRev39MigrationRemakesEmptyPartitionsOffTheirDays: a fresh install
// whose sessions print midnight UTC as another time (its role set so) had
// migration 0016 make today's and the week's partitions off their days,
// all empty. Migration 0074 drops and makes them again, holding their
// days, instead of refusing an install with nothing to repair.
func TestRev39MigrationRemakesEmptyPartitionsOffTheirDays(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 73)
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 30)
	name := "dead_letters_p" + day.Format("20060102")
	_, err := conn.Exec(ctx, `SET datestyle = 'SQL, DMY'; SET timezone = 'Asia/Kolkata'`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SELECT quarantine_dead_letter_partitions($1)`, []time.Time{day.Add(12 * time.Hour), day.Add(36 * time.Hour)})
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `RESET datestyle; RESET timezone`)
	require.NoError(t, err)

	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	for _, p := range []string{name, "dead_letters_p" + day.AddDate(0, 0, 1).Format("20060102")} {
		var bounded bool
		require.NoError(t, conn.QueryRow(ctx, `SELECT quarantine_dead_letter_partition_bounded($1)`, p).Scan(&bounded))
		assert.True(t, bounded, p)
	}
}
