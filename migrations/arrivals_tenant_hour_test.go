package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestArrivalsPerTenantHourBackfilled takes the hours by type and class
// counted before 0061 through it: each tenant's hour is their sum, and the
// fold's upsert after it (inserting one hour, adding to another) moves the
// sums with it, and a delete (the trim's) takes nothing back.
func TestArrivalsPerTenantHourBackfilled(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 60)

	_, err := conn.Exec(ctx, `INSERT INTO dead_letter_arrivals (tenant, hour, item_type, error_class, n) VALUES
        ('acme', '2026-12-01 10:00Z', 'orders.refund', 'permanent', 3),
        ('acme', '2026-12-01 10:00Z', 'email.send', 'transient', 4),
        ('acme', '2026-12-01 11:00Z', 'email.send', 'transient', 5),
        ('globex', '2026-12-01 10:00Z', 'email.send', 'transient', 6)`)
	require.NoError(t, err)
	require.NoError(t, migrations.MigrateTo(ctx, conn, 61))

	sums := func() map[string]int64 {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT tenant || ' ' || to_char(hour AT TIME ZONE 'UTC', 'HH24'), n FROM dead_letter_arrivals_tenant_hour`)
		require.NoError(t, err)
		got := map[string]int64{}
		for rows.Next() {
			var k string
			var n int64
			require.NoError(t, rows.Scan(&k, &n))
			got[k] = n
		}
		require.NoError(t, rows.Err())
		return got
	}
	assert.Equal(t, map[string]int64{"acme 10": 7, "acme 11": 5, "globex 10": 6}, sums())

	// As a fold writes them: one statement, new rows and additions.
	_, err = conn.Exec(ctx, `INSERT INTO dead_letter_arrivals AS a (tenant, hour, item_type, error_class, n) VALUES
        ('acme', '2026-12-01 10:00Z', 'orders.refund', 'permanent', 10),
        ('acme', '2026-12-01 10:00Z', 'search.index_update', 'permanent', 20),
        ('globex', '2026-12-01 12:00Z', 'email.send', 'transient', 1)
        ON CONFLICT (tenant, hour, item_type, error_class) DO UPDATE SET n = a.n + excluded.n`)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"acme 10": 37, "acme 11": 5, "globex 10": 6, "globex 12": 1}, sums())

	// The trim deletes old hours of both tables on its own: a delete here
	// is history kept, not arrivals taken back.
	_, err = conn.Exec(ctx, `DELETE FROM dead_letter_arrivals WHERE tenant = 'globex'`)
	require.NoError(t, err)
	assert.Equal(t, int64(6), sums()["globex 10"])

	require.NoError(t, migrations.MigrateTo(ctx, conn, 60))
	var gone bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass('dead_letter_arrivals_tenant_hour') IS NULL`).Scan(&gone))
	assert.True(t, gone, "0061's down drops the table")
	_, err = conn.Exec(ctx, `INSERT INTO dead_letter_arrivals (tenant, hour, item_type, error_class, n) VALUES ('acme', '2026-12-02 10:00Z', 'email.send', 'transient', 1)`)
	assert.NoError(t, err, "and its triggers")
}
