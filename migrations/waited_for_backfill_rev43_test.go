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

// TestRev43JobsWaitingForASettingAtTheUpgradeKeepIt: a job a worker of
// the release before left waiting for a worker with its REPLAY_SUBJECT_ALLOW
// or REVALIDATE_SUBJECT says so in its result, and migration 0080 records
// it (replay_jobs.waited_for): past its approval's expiry the first worker
// that has the setting blocks it, as it blocks one this release left
// waiting, instead of publishing it on the lapsed approval. Jobs waiting
// for anything else, or ended, are left as they are.
func TestRev43JobsWaitingForASettingAtTheUpgradeKeepIt(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 79)
	admin, err := pgx.Connect(ctx, db.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `SET session_replication_role = replica`) // the requests and items are not what is checked
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `INSERT INTO replay_jobs (request_id, dead_letter_id, dead_lettered_at, state, result) VALUES
        (1, 1, now(), 'pending', 'subject "app.acme.search.reindex" is not in REPLAY_SUBJECT_ALLOW for tenant "acme" on this worker, though every step before allowed it: the processes'' REPLAY_SUBJECT_ALLOW differ, or the subject was taken out since; the job waits for a worker whose setting allows it (until its approval''s expiry, whether or not something of its request was published: then it is blocked; cancel the request if the setting was changed on purpose)'),
        (1, 2, now(), 'pending', 'no revalidation subject is configured on this worker (REVALIDATE_SUBJECT), though the request was approved where one is: the job waits for a worker that has it (until its approval''s expiry, whether or not something of its request was published: then it is blocked; cancel the request if the setting was changed on purpose); set it on every worker as on serve'),
        (1, 3, now(), 'pending', 'waiting for another job with the same identity'),
        (1, 4, now(), 'blocked', 'the job waits for a worker whose setting allows it')`)
	require.NoError(t, err)

	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)
	rows, err := conn.Query(ctx, `SELECT waited_for FROM replay_jobs ORDER BY dead_letter_id`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{"subject", "no-revalidation-service", "", ""}, got)
}
