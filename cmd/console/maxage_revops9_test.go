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

// TestRevOps9ShortStreamMaxAgeIsNamed (review rev-ops9): DLQ_MAX_AGE is
// accepted from 0 to 87600h (cmd/console/serve.go), so "1m" parses. The
// DLQ stream the console makes has a fixed 2-minute duplicate window
// (dlq.Ingester.dlqStreamConfig: Duplicates 2m), and JetStream refuses a
// stream whose duplicate window is longer than its age limit ("duplicates
// window can not be larger then max age", an API error of code 500, err
// 10052, which dlq.jetStreamNotReady takes for "no leader yet", as with
// DLQ_REPLICAS). A first start with DLQ_MAX_AGE below 2m therefore logs
// "waiting for JetStream" for all of NATS_WAIT (1m) and exits with
// "... (JetStream did not answer within 1m0s ...)", naming neither
// DLQ_MAX_AGE nor the 2-minute floor: the setting's help
// and README promise a range the console cannot run with. It must be
// refused at parse ("DLQ_MAX_AGE (--dlq-max-age) 1m: must be 0 or at
// least 2m ..."), or the console must name the setting it cannot honour.
func TestRevOps9ShortStreamMaxAgeIsNamed(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	idp := testidp.Start(t)
	e := env(map[string]string{
		"DATABASE_URL": db.URL, "POLICY_FILE": "../../dev/policy.toml", "OIDC_ISSUER": idp.Issuer,
		"OIDC_CLIENT_ID": idp.ClientID, "OIDC_CLIENT_SECRET": idp.ClientSecret,
		"AUDIT_SIGNING_KEY_FILE": newKeyFile(t), "METRICS_ADDR": "127.0.0.1:0",
		"NATS_EMBEDDED_DIR": t.TempDir(), "NATS_EMBEDDED_ADDR": "127.0.0.1:0",
		"DLQ_MAX_AGE": "1m", "NATS_WAIT": "3s",
	})
	cfg, err := parseServe([]string{"--addr", "127.0.0.1:0"}, e, io.Discard)
	if err != nil {
		assert.Contains(t, err.Error(), "DLQ_MAX_AGE")
		return // refused at parse, naming it: fixed
	}
	require.NoError(t, cfg.loadSecrets())
	logged := &logs.Buffer{}
	a, err := app.New(context.Background(), cfg.Config, newLogger(logged, "debug", "text"))
	if err == nil {
		a.Close()
		return // started and made its stream: the age limit was honoured
	}
	assert.NotContains(t, err.Error(), "did not answer", "a refusal is reported as JetStream not answering")
	assert.Contains(t, err.Error(), "DLQ_MAX_AGE", "DLQ_MAX_AGE=1m parses, then the start fails without naming it: %v", err)
}
