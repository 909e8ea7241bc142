package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRevOps9RevalidateSubjectIsChecked (review rev-ops9): REVALIDATE_SUBJECT
// is bound with no check at all (cmd/console/worker.go, settings.replay:
// s.str(..., "REVALIDATE_SUBJECT", ..., nil)), in serve and in worker alike.
// A subject a request can never be published to (a wildcard, an empty
// token, white space: dlq.ValidatePublishSubject refuses each) is taken
// as "revalidation is configured": the console starts, says revalidate
// items can be replayed (Revalidation: cfg.RevalidateSubject != ""), and
// only at replay time does every revalidate item fail its revalidation.
// Every other subject setting (DLQ_SUBJECT_PREFIX, REPLAY_SUBJECT_ALLOW)
// is refused at start naming the variable; this one must be too.
func TestRevOps9RevalidateSubjectIsChecked(t *testing.T) {
	t.Parallel()
	key := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(key, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"revalidate.>", "revalidate.*.principal", "revalidate..principal", "revalidate principal", " "} {
		t.Run("serve/"+bad, func(t *testing.T) {
			e := env(map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1/db", "OIDC_ISSUER": "http://127.0.0.1:1/dex", "OIDC_CLIENT_ID": "c",
				"AUDIT_SIGNING_KEY_FILE": key, "REVALIDATE_SUBJECT": bad})
			_, err := parseServe(nil, e, io.Discard)
			if assert.Error(t, err, "serve accepts REVALIDATE_SUBJECT %q, to which no revalidation request can be sent", bad) {
				assert.Contains(t, err.Error(), "REVALIDATE_SUBJECT")
			}
		})
		t.Run("worker/"+bad, func(t *testing.T) {
			// A database that refuses at once (DATABASE_WAIT 0): a worker that
			// got past its settings fails on the connection instead.
			e := env(map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1:1/db", "DATABASE_WAIT": "0s", "NATS_URL": "nats://127.0.0.1:1",
				"NATS_WAIT": "1s", "POLICY_FILE": "../../dev/policy.toml", "METRICS_ADDR": "off", "REVALIDATE_SUBJECT": bad})
			err := run(context.Background(), []string{"console", "worker"}, e, io.Discard, io.Discard)
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), "REVALIDATE_SUBJECT", "worker accepts REVALIDATE_SUBJECT %q and fails later: %v", bad, err)
			}
		})
	}
}
