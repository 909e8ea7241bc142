package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestRevDocs10WorkerWithNoReplayWorkersIsRefused: README tells an
// operator to set REPLAY_WORKERS=0 for `console serve` when `console
// worker` processes replay instead, and says the worker reads REPLAY_*
// (it "runs 4 when it is not set"). A deploy that sets REPLAY_WORKERS=0
// in the environment both share (one ConfigMap, one env file) gets worker
// processes that start, pass /readyz and replay nothing: the only trace is
// "console worker: 0 replay workers" on stdout, and ReplayNotProgressing
// 15 minutes later. A worker process exists to run replay workers; 0 must
// stop it at start naming REPLAY_WORKERS (or the README must say the
// worker's variable must be set apart). (review revdocs10)
func TestRevDocs10WorkerWithNoReplayWorkersIsRefused(t *testing.T) {
	env := map[string]string{
		"REPLAY_WORKERS": "0",
		"DATABASE_URL":   "postgres://nobody@127.0.0.1:1/quarantine",
		"DATABASE_WAIT":  "0s",
		"NATS_URL":       "nats://127.0.0.1:1",
		"POLICY_FILE":    "../../dev/policy.toml",
		"METRICS_ADDR":   "off",
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, []string{"console", "worker"}, func(k string) string { return env[k] }, &stdout, &stderr)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("REPLAY_WORKERS")) {
		t.Fatalf("console worker with REPLAY_WORKERS=0 went on to connect (err %v); want a refusal at start naming REPLAY_WORKERS", err)
	}
}
