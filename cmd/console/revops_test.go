package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
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
