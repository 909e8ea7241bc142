package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev34MigrateURLAloneIsRefused: make run's ensure_console_db took
// MIGRATE_DATABASE_URL set alone as "both set" and went on with the
// DATABASE_URL ensure_postgres had chosen, an administrator's: the console
// then refused to start as a role that may alter its audit log, after a
// log line saying both came from the environment. It is refused at once,
// saying to set both or neither; both set are used as they are.
func TestRev34MigrateURLAloneIsRefused(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("../../scripts/postgres.sh")
	require.NoError(t, err)
	run := func(env ...string) (string, error) {
		// As run.sh: sourced, then ensure_postgres (here: the
		// administrator's URL it would set), then ensure_console_db.
		cmd := exec.Command("bash", "-c", `source "$0" && DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:1/postgres} && ensure_console_db`, script)
		cmd.Dir = t.TempDir()
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("MIGRATE_DATABASE_URL=postgres://quarantine_owner@db/quarantine")
	require.Error(t, err, out)
	assert.Contains(t, out, "MIGRATE_DATABASE_URL is set but DATABASE_URL is not; set both")

	// run.sh asks it first, before PostgreSQL is installed or started.
	early := exec.Command("bash", "-c", `source "$0" && check_console_urls`, script)
	early.Dir, early.Env = t.TempDir(), []string{"PATH=" + os.Getenv("PATH"), "MIGRATE_DATABASE_URL=postgres://quarantine_owner@db/quarantine"}
	got, err := early.CombinedOutput()
	require.Error(t, err, string(got))
	assert.Contains(t, string(got), "set both")
	runSh, err := os.ReadFile("../../scripts/run.sh")
	require.NoError(t, err)
	assert.Less(t, bytes.Index(runSh, []byte("check_console_urls")), bytes.Index(runSh, []byte("\nensure_postgres")), "run.sh checks before ensure_postgres")

	out, err = run("MIGRATE_DATABASE_URL=postgres://quarantine_owner@db/quarantine", "DATABASE_URL=postgres://quarantine_app@db/quarantine")
	require.NoError(t, err, out)
	assert.Contains(t, out, "using MIGRATE_DATABASE_URL and DATABASE_URL from the environment")
}
