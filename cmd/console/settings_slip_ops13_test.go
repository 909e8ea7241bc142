package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevOps13SlipUnderSharedPrefixIsNamed: NATS_URL takes a
// comma-separated list, so NATS_URLS is the likeliest slip of all, and a
// serve that does not read NATS_URL starts its embedded NATS server: it
// is ready, ingests nothing of the real DLQ stream and replays into a
// server nobody else uses, with no word at start. The unknown-setting
// check passes over every variable under NATS_, DATABASE_, LOG_ and TLS_
// (foreignPrefixes, settings_unknown.go:38), so neither this nor
// DATABASE_STATEMENT_TIMEOUTS is named. Other tools' own variables
// (NATS_CREDS, DATABASE_HOST, LOG_DIR) must stay unnamed: a slip there is
// a name a few edits from one of the console's settings.
func TestRevOps13SlipUnderSharedPrefixIsNamed(t *testing.T) {
	t.Parallel()
	environ := []string{
		"NATS_URLS=nats://nats-1.prod:4222,nats://nats-2.prod:4222", "DATABASE_STATEMENT_TIMEOUTS=2s", // slips
		"NATS_CREDS=/x", "NATS_CONTEXT=prod", "DATABASE_HOST=db", "LOG_DIR=/var/log", // other tools'
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
	for _, u := range unknownSettings(environ, getenv, knownSettings(context.Background())) {
		got[u.name] = u.closest
	}
	assert.Equal(t, "NATS_URL", got["NATS_URLS"], "NATS_URLS is ignored without a word: %v", got)
	assert.Equal(t, "DATABASE_STATEMENT_TIMEOUT", got["DATABASE_STATEMENT_TIMEOUTS"], "%v", got)
	for _, other := range []string{"NATS_CREDS", "NATS_CONTEXT", "DATABASE_HOST", "LOG_DIR"} {
		assert.NotContains(t, got, other)
	}

	// What the slip does: serve runs the embedded server.
	c, err := parseServe(nil, func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://x@h/db", "OIDC_ISSUER": "http://127.0.0.1:1", "OIDC_CLIENT_ID": "c",
			"AUDIT_SIGNING_KEY_FILE": newKeyFile(t)}[k] + getenv(k)
	}, io.Discard)
	require.NoError(t, err)
	assert.Empty(t, c.NATSURL, "NATS_URL empty: the embedded server")
}
