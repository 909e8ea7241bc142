package main

import (
	"io"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev39StreamAgeLimitShorterThanFourAckWaitsIsRefused: a killed
// replica's batch is delivered again only after INGEST_ACK_WAIT, and
// JetStream discards a message at DLQ_MAX_AGE whether it was acked or
// not. An age limit within a few ack waits loses that batch unstored, so
// the start refuses it, naming both settings; four ack waits or more, or
// no age limit, start.
func TestRev39StreamAgeLimitShorterThanFourAckWaitsIsRefused(t *testing.T) {
	t.Parallel()
	base := map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1/db", "OIDC_ISSUER": "http://127.0.0.1:1/dex", "OIDC_CLIENT_ID": "c",
		"AUDIT_SIGNING_KEY_FILE": newKeyFile(t)}
	with := func(age, ackWait string) error {
		e := maps.Clone(base)
		e["DLQ_MAX_AGE"], e["INGEST_ACK_WAIT"] = age, ackWait
		_, err := parseServe(nil, env(e), io.Discard)
		return err
	}
	err := with("30m", "10m")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DLQ_MAX_AGE (--dlq-max-age) 30m")
	assert.Contains(t, err.Error(), "INGEST_ACK_WAIT (--ingest-ack-wait) 10m")
	assert.Contains(t, err.Error(), "at least 40m")
	assert.NoError(t, with("40m", "10m"))
	assert.NoError(t, with("0", "1h"), "no age limit")
	assert.NoError(t, with("15m", "1m"), "the defaults' floor holds as before")
}
