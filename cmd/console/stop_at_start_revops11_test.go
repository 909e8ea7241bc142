package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOps11StopWhileWaitingAtStartIsNoFailure (review rev-ops 11): a
// serve or worker told to stop (SIGTERM of a deploy or a scale-down,
// Ctrl-C) while it waits at start for PostgreSQL (DATABASE_WAIT; every
// replica during a database outage, as the runbook's "Probes" section
// intends) exits 1 with "console: PostgreSQL at DATABASE_URL did not
// answer: context canceled": the runbook's "serve or worker does not
// start" reads that line as DATABASE_WAIT having run out, the supervisor
// records a failed unit/container (Error, not Completed) for a stop it
// asked for, and a rollout that stops waiting replicas reports each as a
// crash. A stop asked for is not a failure, as it is once the process
// runs (Run returns nil): run should return nil, exit status 0.
func TestRevOps11StopWhileWaitingAtStartIsNoFailure(t *testing.T) {
	t.Parallel()
	noDB := fmt.Sprintf("postgres://app@127.0.0.1:%d/quarantine?sslmode=disable", freeTCPPort(t))
	for name, args := range map[string][]string{
		"worker": {"console", "worker"},
		"serve":  {"console", "serve", "--addr", "127.0.0.1:0"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stdout, stderr := &logs.Buffer{}, &logs.Buffer{}
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, args, env(map[string]string{
					"DATABASE_URL": noDB, "DATABASE_WAIT": "5m", "POLICY_FILE": "../../dev/policy.toml",
					"NATS_URL": "nats://127.0.0.1:4", "METRICS_ADDR": "off",
					"OIDC_ISSUER": "http://127.0.0.1:5/", "OIDC_CLIENT_ID": "console", "AUDIT_SIGNING_KEY_FILE": newKeyFile(t),
				}), stdout, stderr)
			}()
			wait.Until(t, name+" to wait for PostgreSQL", time.Minute, func() bool { return containsLine(stderr, "waiting for PostgreSQL") })
			cancel() // SIGTERM
			err := receive(t, done, time.Minute)
			if err != nil {
				t.Fatalf("%s stopped by its supervisor while waiting for PostgreSQL at start: run returned %q (exit status %d), "+
					"want nil (exit status 0): the stop was asked for, PostgreSQL did not fail DATABASE_WAIT", name, err, exitCode(err))
			}
		})
	}
}
