package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestConsoleKeeperPurgesByItsTermsUnderACheckpoint: the keeper a console
// runs (as app.New wires it, not one a test builds) removes, at its first
// pass, a dead letter its policy file's terms no longer keep (unresolved,
// 90 days: this one arrived 100 days ago) and nothing they keep; the run
// is audited, and a checkpoint signs the head its audit row made: the
// terms it judges by carry their version (the active one: terms without
// it are taken for stale and remove nothing), and its checkpoints are the
// console's own signer's.
func TestConsoleKeeperPurgesByItsTermsUnderACheckpoint(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	long := 100 * 24 * time.Hour
	old := testfactory.DeadLetter(t, db.Pool, testfactory.Letter{MsgID: "keeper-old", At: time.Now().Add(-long)})
	_, err := db.Pool.Exec(ctx, `UPDATE dead_letters SET received_at = dead_lettered_at WHERE id = $1`, old)
	require.NoError(t, err)
	kept := testfactory.DeadLetter(t, db.Pool, testfactory.Letter{MsgID: "keeper-kept", At: time.Now().Add(-time.Hour)})

	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{DatabaseURL: db.URL})
	exists := func(id int64) bool {
		var n int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE id = $1`, id).Scan(&n))
		return n == 1
	}
	wait.For(t, "the console's keeper to remove the dead letter past its terms", time.Minute, func() error {
		if exists(old) {
			return fmt.Errorf("dead letter %d is still stored", old)
		}
		return nil
	})
	assert.True(t, exists(kept), "what the terms keep stays")

	page, err := audit.List(ctx, b.Pool, audit.Filter{Action: audit.ActionRetentionPurge, Limit: audit.MaxLimit})
	require.NoError(t, err)
	require.Len(t, page.Entries, 1, "one audited run")
	run := page.Entries[0]
	assert.Equal(t, "retention", run.Actor.Subject)
	var reason string
	err = b.Pool.QueryRow(ctx, `SELECT reason FROM audit_checkpoints WHERE seq = $1`, run.Seq).Scan(&reason)
	require.NotErrorIs(t, err, pgx.ErrNoRows, "a checkpoint signs the head the run's audit row made")
	require.NoError(t, err)
	assert.Contains(t, reason, "retention purge")
}
