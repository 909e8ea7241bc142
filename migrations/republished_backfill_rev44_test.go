package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRev44JobsRepublishedBeforeTheUpgradeKeepTheirRepublish: a job a
// person settled "not applied, republish" under the release before was
// sent a second time, and only the audit log says so (its
// replay.item.reconciled entry, choice republish). Migration 0082 records
// the last such decision on the job (replay_jobs.republished_at), so that
// a dead letter that came back from its first send is not replayed as new
// after the upgrade. Jobs settled otherwise, or never, keep none.
func TestRev44JobsRepublishedBeforeTheUpgradeKeepTheirRepublish(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 81)
	admin, err := pgx.Connect(ctx, db.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `SET session_replication_role = replica`) // the requests and items are not what is checked
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `INSERT INTO replay_jobs (request_id, dead_letter_id, dead_lettered_at, state, result) VALUES
        (7, 1, now(), 'replayed', 'replayed: published'), (7, 2, now(), 'replayed', 'applied'), (8, 1, now(), 'replayed', 'replayed')`)
	require.NoError(t, err)

	first, last := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	settle := func(request int, deadLetter string, choice string, at time.Time) {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		_, err = audit.Append(ctx, tx, audit.Event{Tenant: "acme", Action: "replay.item.reconciled", ObjectType: "dead_letter",
			ObjectID: deadLetter, Outcome: audit.OutcomeOK, At: at,
			After: map[string]any{"choice": choice, "state": "pending", "request": request}})
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
	}
	settle(7, "1", "republish", first)
	settle(7, "1", "republish", last) // its republish needed a person again, who republished it again
	settle(7, "2", "applied", last)
	settle(8, "2", "republish", last) // a dead letter request 8 has no job of

	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	rows, err := conn.Query(ctx, `SELECT request_id, dead_letter_id, republished_at FROM replay_jobs ORDER BY request_id, dead_letter_id`)
	require.NoError(t, err)
	type row struct {
		Request, DeadLetter int64
		At                  *time.Time
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.NotNil(t, got[0].At, "request 7's job of dead letter 1 was republished")
	assert.True(t, got[0].At.Equal(last), "the last decision: %s", got[0].At)
	assert.Nil(t, got[1].At, "settled applied: not sent again")
	assert.Nil(t, got[2].At, "request 8 republished another dead letter")
}
