package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestContradictorySettingsAreRefused (review rev-ops): each value is in
// its own range, but together they cannot work, and serve starts without
// a word:
//   - REVALIDATE_TIMEOUT longer than two thirds of REPLAY_LEASE: a worker
//     asks the revalidation service under a deadline of two thirds of the
//     lease (dlq/replay/worker.go RunOnce `until`, judge.go judge,
//     publish.go publishRequest), so a service answering after that but
//     within the configured timeout never gets its items published: every
//     claim releases them ("released"), forever;
//   - INGEST_ACK_WAIT shorter than INGEST_MAX_WAIT: JetStream redelivers a
//     dead letter while it still waits for its batch, every time.
func TestContradictorySettingsAreRefused(t *testing.T) {
	t.Parallel()
	key := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(key, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1/db", "OIDC_ISSUER": "http://127.0.0.1:1/dex", "OIDC_CLIENT_ID": "c",
		"AUDIT_SIGNING_KEY_FILE": key}
	for name, extra := range map[string]map[string]string{
		"RevalidateTimeoutPastLease": {"REPLAY_LEASE": "3s", "REVALIDATE_TIMEOUT": "30s"},
		"AckWaitBelowBatchWait":      {"INGEST_ACK_WAIT": "1s", "INGEST_MAX_WAIT": "5s"},
	} {
		t.Run(name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range base {
				e[k] = v
			}
			for k, v := range extra {
				e[k] = v
			}
			_, err := parseServe(nil, env(e), io.Discard)
			assert.Error(t, err, "%v is accepted", extra)
		})
	}
}

// TestAuditVerifyInServesEnvironment (review rev-ops): after a key
// rotation, serve runs with AUDIT_SIGNING_KEY_FILE=new and
// AUDIT_PUBLIC_KEYS=old.pub (docs/access.md: "give serve the earlier keys
// after a rotation"; serve trusts them and its signing key's public half).
// On-call runs `console audit verify` in that same environment (the
// runbook: "with DATABASE_URL"). verify reads AUDIT_PUBLIC_KEYS too, but
// as the whole set: the signing key's public half is used only when no
// public key is given (cmd/console/audit.go runAuditVerify), so every
// checkpoint the current key signed is "signed by key K, which is not one
// of the public keys given", which the runbook lists next to "someone
// signed with a key of their own": an intact log reads as tampered.
func TestAuditVerifyInServesEnvironment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	old, current := newKeyFile(t), newKeyFile(t)
	e := env(map[string]string{"DATABASE_URL": db.URL})
	for _, key := range []string{old, current} {
		for i := range 2 {
			_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "test.event", Outcome: audit.OutcomeOK, Reason: fmt.Sprint(i)})
			require.NoError(t, err)
		}
		require.NoError(t, run(ctx, []string{"console", "audit", "checkpoint", "--audit-signing-key", key}, e, io.Discard, io.Discard))
	}
	serveEnv := env(map[string]string{"DATABASE_URL": db.URL, "AUDIT_SIGNING_KEY_FILE": current, "AUDIT_PUBLIC_KEYS": old + ".pub"})
	var out bytes.Buffer
	err := run(ctx, []string{"console", "audit", "verify"}, serveEnv, &out, io.Discard)
	assert.NoError(t, err, "an intact log, verified with serve's own settings: %s", out.String())
}
