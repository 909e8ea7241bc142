package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/logs"
)

// TestRevOps23MigrateOfAnOlderReleaseFailsOnANewerSchema (review 23f):
// README's upgrade order is "console migrate first, then roll the
// processes", and the runbook's first answer to a deploy gone wrong is
// "After a deploy, roll back first". serve and worker accept a schema newer
// than their binary on purpose (app.CheckDatabase: "the database schema is
// newer than this console; continuing (migrations only add)"), so the
// previous release runs on the new schema. Its `console migrate`, though,
// the step the same deploy (a pipeline, a Helm hook, an init container of
// the serve pod) runs first, exits 1 with tern's "migrate: current version
// N+1 is outside the valid versions of 0 to N": the rollback stops at its
// first step, and an init-container deploy leaves every restarted pod of
// the previous release unable to start. It neither names the situation
// (the schema is newer than this release) nor says what to do. A schema
// newer than the binary must be, for migrate as for serve, nothing to do:
// exit 0, saying that the schema is newer than this release.
//
// Simulated with the schema's recorded version one above this binary's
// newest, as a release with one more migration leaves it.
func TestRevOps23MigrateOfAnOlderReleaseFailsOnANewerSchema(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	newest, err := migrations.Newest()
	require.NoError(t, err)
	_, err = db.OwnerPool.Exec(ctx, `UPDATE `+migrations.VersionTable+` SET version = $1`, newest+1)
	require.NoError(t, err)

	// serve's check: the newer schema is accepted, with a warning.
	pool, err := app.OpenPool(ctx, db.URL, 0, app.PoolConfig{Name: "check"}, newLogger(io.Discard, "info", "text"))
	require.NoError(t, err)
	defer pool.Close()
	logged := &logs.Buffer{}
	require.NoError(t, app.CheckDatabase(ctx, pool, newLogger(logged, "info", "text")), "serve refuses the newer schema")
	require.Contains(t, logged.String(), "newer than this console")

	// console migrate of the same (older) release, as a deploy or a rollback runs it first.
	var stdout bytes.Buffer // "schema at version N" once it succeeds
	err = run(ctx, []string{"console", "migrate"}, env(map[string]string{"MIGRATE_DATABASE_URL": db.OwnerURL}), &stdout, io.Discard)
	require.NoError(t, err, "console migrate of a release older than the schema (version %d, this release's newest %d) fails the deploy that runs it first", newest+1, newest)
	assert.Contains(t, stdout.String(), "newer", "console migrate does not say the schema is newer than this release")
}
