package main

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRevOps26VerifyWarnsWhenEntriesStayUnsignedPastTheInterval: the
// other half of verify's "is the console signing?" warning. Few entries
// follow the newest checkpoint (well under AUDIT_CHECKPOINT_EVERY), but
// the first of them has waited unsigned for two hours, far longer than
// AUDIT_CHECKPOINT_INTERVAL: a console that stopped signing on a quiet
// log shows only this way, and the warning must say so. Signed again,
// the warning goes.
func TestRevOps26VerifyWarnsWhenEntriesStayUnsignedPastTheInterval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	key := newKeyFile(t)
	var dbNow time.Time
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT now()`).Scan(&dbNow))
	appendAt := func(at time.Time) {
		t.Helper()
		_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK, At: at})
		require.NoError(t, err)
	}
	e := env(map[string]string{"DATABASE_URL": db.URL, "AUDIT_SIGNING_KEY_FILE": key, "AUDIT_CHECKPOINT_INTERVAL": "5m"})
	appendAt(dbNow.Add(-3 * time.Hour))
	require.NoError(t, run(ctx, []string{"console", "audit", "checkpoint"}, e, io.Discard, io.Discard))
	unsignedSince := dbNow.Add(-2 * time.Hour).UTC().Truncate(time.Second)
	appendAt(unsignedSince)

	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{"console", "audit", "verify"}, e, &out, io.Discard), "a stale checkpoint is a warning, not a broken chain")
	assert.Contains(t, out.String(), "warning: the newest checkpoint that verifies is at seq 1; the entries after it have been unsigned since "+
		unsignedSince.Format(time.RFC3339)+", longer than AUDIT_CHECKPOINT_INTERVAL (5m0s); is the console signing?")

	require.NoError(t, run(ctx, []string{"console", "audit", "checkpoint"}, e, io.Discard, io.Discard))
	out.Reset()
	require.NoError(t, run(ctx, []string{"console", "audit", "verify"}, e, &out, io.Discard))
	assert.NotContains(t, out.String(), "is the console signing?", "every entry signed: %s", out.String())
}
