package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixOps11StopWhileWaitingAtStartIsNoFailure: a stop asked for while
// serve or worker waits at start is exit status 0 for every wait, not only
// PostgreSQL's (TestRevOps11StopWhileWaitingAtStartIsNoFailure): NATS
// (worker and serve) and the identity provider (serve), each with
// PostgreSQL there.
func TestFixOps11StopWhileWaitingAtStartIsNoFailure(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	nowhere := func() string { return fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t)) }
	common := func(extra map[string]string) map[string]string {
		e := map[string]string{"DATABASE_URL": db.URL, "POLICY_FILE": "../../dev/policy.toml", "METRICS_ADDR": "off",
			"NATS_WAIT": "5m", "OIDC_WAIT": "5m", "OIDC_CLIENT_ID": "console", "AUDIT_SIGNING_KEY_FILE": newKeyFile(t)}
		for k, v := range extra {
			e[k] = v
		}
		return e
	}
	ns := natstest.Start(t)
	for name, tc := range map[string]struct {
		args    []string
		env     map[string]string
		waitFor string
	}{
		"WorkerNATS": {[]string{"console", "worker"}, common(map[string]string{"NATS_URL": "nats://" + nowhere()}), "waiting for NATS"},
		"ServeNATS": {[]string{"console", "serve", "--addr", "127.0.0.1:0"},
			common(map[string]string{"NATS_URL": "nats://" + nowhere(), "OIDC_ISSUER": "http://" + nowhere() + "/"}), "waiting for NATS"},
		"ServeIdentityProvider": {[]string{"console", "serve", "--addr", "127.0.0.1:0"},
			common(map[string]string{"NATS_URL": ns.ClientURL(), "OIDC_ISSUER": "http://" + nowhere() + "/"}), "waiting for the identity provider"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stdout, stderr := &logs.Buffer{}, &logs.Buffer{}
			done := make(chan error, 1)
			go func() { done <- run(ctx, tc.args, env(tc.env), stdout, stderr) }()
			wait.Until(t, name+": "+tc.waitFor, 2*time.Minute, func() bool {
				select {
				case err := <-done:
					t.Fatalf("ended before it waited: %v\n%s", err, stderr.String())
				default:
				}
				return containsLine(stderr, tc.waitFor)
			})
			cancel() // SIGTERM
			if err := receive(t, done, time.Minute); err != nil {
				t.Fatalf("stopped while %s at start: run returned %q (exit status %d), want nil\n%s", tc.waitFor, err, exitCode(err), stderr.String())
			}
		})
	}
}
