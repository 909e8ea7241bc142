package main

import (
	"context"
	"io"
	"testing"

	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/logs"
)

// TestRevOps9ReplicasOnASingleServerIsNamed (review rev-ops9): DLQ_REPLICAS
// is accepted from 1 to 5 whatever the NATS server; with the embedded
// server (NATS_URL empty, one node by construction: checkEmbeddedAddr) or
// any standalone server, JetStream refuses a stream of more than one
// replica with "replicas > 1 not supported in non-clustered mode", an API
// error of code 500 (nats-server JSStreamReplicasNotSupportedErr).
// dlq.jetStreamNotReady takes every code >= 500 for "no leader yet", so
// SetupWithin logs "waiting for JetStream" once a second for the whole
// NATS_WAIT and the console then exits with "... (JetStream did not
// answer within 1m0s, N attempts)". The runbook reads that line as "no
// JetStream leader: a cluster node restarting, a quorum not formed ...
// check the cluster (nats server report jetstream)": on-call chases a
// cluster that does not exist. A setting the server can never honour
// must be refused at once, naming DLQ_REPLICAS (at parse for the embedded
// server, or as a refusal for a standalone one), not waited on.
func TestRevOps9ReplicasOnASingleServerIsNamed(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	idp := testidp.Start(t)
	e := env(map[string]string{
		"DATABASE_URL": db.URL, "POLICY_FILE": "../../dev/policy.toml", "OIDC_ISSUER": idp.Issuer,
		"OIDC_CLIENT_ID": idp.ClientID, "OIDC_CLIENT_SECRET": idp.ClientSecret,
		"AUDIT_SIGNING_KEY_FILE": newKeyFile(t), "METRICS_ADDR": "127.0.0.1:0",
		"NATS_EMBEDDED_DIR": t.TempDir(), "NATS_EMBEDDED_ADDR": "127.0.0.1:0",
		"DLQ_REPLICAS": "3", "NATS_WAIT": "3s",
	})
	cfg, err := parseServe([]string{"--addr", "127.0.0.1:0"}, e, io.Discard)
	if err != nil {
		assert.Contains(t, err.Error(), "DLQ_REPLICAS")
		return // refused at parse, naming it: fixed
	}
	require.NoError(t, cfg.loadSecrets())
	logged := &logs.Buffer{}
	a, err := app.New(context.Background(), cfg.Config, newLogger(logged, "debug", "text"))
	if err == nil {
		a.Close()
		t.Fatal("serve started with DLQ_REPLICAS=3 on the embedded, single-node NATS server")
	}
	assert.NotContains(t, logged.String(), "waiting for JetStream", "a refusal is waited on as a cluster without a leader")
	assert.NotContains(t, err.Error(), "did not answer", "the exit says JetStream did not answer, which the runbook reads as a cluster problem")
	assert.Contains(t, err.Error(), "DLQ_REPLICAS", "the exit does not name the setting to change: %v", err)
}
