package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
)

// TestRevOps13UsageErrorPrintsNoSecret: a command line a command does not
// take (a flag misspelt in a manifest, a stray argument) prints the usage
// on stderr, which the log collector keeps; each flag's default there is
// its environment variable's value (settings.def), printed whole and not
// redacted: DATABASE_URL's password, NATS_URL's token, OIDC_CLIENT_SECRET.
func TestRevOps13UsageErrorPrintsNoSecret(t *testing.T) {
	t.Parallel()
	const pw, token, clientSecret = "Sup3rSecretPw", "tok3nvalue", "oidc-Secret-Value-123"
	e := env(map[string]string{
		"DATABASE_URL": "postgres://app:" + pw + "@db:5432/q", "MIGRATE_DATABASE_URL": "postgres://owner:" + pw + "@db:5432/q",
		"NATS_URL": "nats://" + token + "@n1:4222", "OIDC_CLIENT_SECRET": clientSecret,
		"OIDC_ISSUER": "http://127.0.0.1:1", "OIDC_CLIENT_ID": "c", "POLICY_FILE": "../../dev/policy.toml",
	})
	for _, args := range [][]string{
		{"console", "serve", "--adr", "127.0.0.1:8080"}, // misspelt flag
		{"console", "serve", "stray"},
		{"console", "worker", "--replay-worker", "2"},
		{"console", "migrate", "--database", "x"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, e, &stdout, &stderr)
		require.Error(t, err, args)
		for _, out := range []string{stderr.String() + stdout.String(), app.Redact(err.Error())} {
			for _, secret := range []string{pw, token, clientSecret} {
				assert.False(t, strings.Contains(out, secret), "%v prints the secret %q in its usage", args, secret)
			}
		}
	}
}
