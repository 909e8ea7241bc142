package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevOps19PolicyShowEmptyVersionIsNotTheActiveOne: the runbook's
// rollback reads "console policy show <version>" before it allows one;
// typed from a variable that is empty (`console policy show "$V"`), the
// command takes the empty VERSION for none and prints the ACTIVE policy
// and terms, exit 0: the operator reads what is in force as what they
// are about to roll back to. An empty VERSION is a command line the
// command does not take (README: usage, exit 2), as --canonical without
// one already is.
func TestRevOps19PolicyShowEmptyVersionIsNotTheActiveOne(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	tbl, err := replaypolicy.Parse("active.toml", src)
	require.NoError(t, err)
	require.NoError(t, replay.New(db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return tbl }}).ActivatePolicy(ctx, "host-1"))

	var out bytes.Buffer
	err = run(ctx, []string{"console", "policy", "show", ""}, env(map[string]string{"DATABASE_URL": db.URL}), &out, io.Discard)
	if !assert.Error(t, err, "an empty VERSION was taken for none; it printed the active version instead:\n%s", out.String()) {
		return
	}
	assert.Equal(t, 2, exitCode(err))
}
