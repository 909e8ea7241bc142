package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFixOps12UnknownSettings: which variables are taken for slips, and
// the setting each is named with; the known names come from every
// command's settings (migrate's and demo's too, so that an environment
// shared by the commands warns of nothing).
func TestFixOps12UnknownSettings(t *testing.T) {
	t.Parallel()
	known := knownSettings(context.Background())
	for _, k := range []string{"DATABASE_URL", "MIGRATE_DATABASE_URL", "DLQ_WATCH_STREAMS", "METRICS_TOKEN_FILE", "DEMO_RATE", "AUDIT_SIGNING_KEY_FILE", "POLICY_FILE"} {
		assert.Contains(t, known, k)
	}
	environ := []string{
		"METRICS_TOKEN=s", "DLQ_WATCH_STREAM=ORDERS", "OIDC_CLIENTID=c", // slips
		"DLQ_STREAM=DLQ", "MIGRATE_DATABASE_URL=postgres://x", "DEMO_RATE=5", // settings of some command
		"NATS_CREDS=/x", "DATABASE_HOST=db", "LOG_DIR=/var/log", // other tools' prefixes
		"METRICS_SERVICE_HOST=10.0.0.1", "METRICS_PORT_9464_TCP_ADDR=10.0.0.1", "METRICS_PORT=tcp://10.0.0.1:9464", // Kubernetes service links
		"HOME=/root", "PATH=/bin", "INGEST_EMPTY=", // not ours, or empty
	}
	getenv := func(k string) string {
		for _, kv := range environ {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return ""
	}
	got := map[string]string{}
	for _, u := range unknownSettings(environ, getenv, known) {
		got[u.name] = u.closest
	}
	assert.Equal(t, map[string]string{"DLQ_WATCH_STREAM": "DLQ_WATCH_STREAMS", "METRICS_TOKEN": "METRICS_TOKEN_FILE", "OIDC_CLIENTID": "OIDC_CLIENT_ID"}, got)

	t.Run("NotForVersion", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		assert.NoError(t, run(context.Background(), []string{"console", "version"}, getenv, &stdout, &stderr, environ...))
		assert.Empty(t, stderr.String(), "version reads no setting: nothing to warn of")
	})
}
