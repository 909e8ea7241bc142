package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevOps12PublicURLWithAPathIsRefused (review revops12): every page,
// form, redirect and cookie of the console is rooted at "/" (views link
// to "/deadletters", handlers redirect to "/admin/bindings", the login
// cookie has Path=/, the session cookie is __Host- prefixed, which needs
// Path=/), so the console cannot be served under a path. Yet
// CONSOLE_PUBLIC_URL=https://ops.example/quarantine is taken as it is
// (checkOptionalHTTPURL looks at the scheme and host only): the default
// OIDC_REDIRECT_URL becomes https://ops.example/quarantine/auth/callback,
// which the console has no route for (behind a proxy that does not strip
// the path) or, behind one that does, every link and redirect after the
// sign-in leaves the prefix. The operator finds out from a broken sign-in,
// not from a line naming the setting, as README promises for a bad value.
func TestRevOps12PublicURLWithAPathIsRefused(t *testing.T) {
	t.Parallel()
	key := filepath.Join(t.TempDir(), "key.pem")
	require.NoError(t, os.WriteFile(key, []byte("x"), 0o600))
	policy, err := filepath.Abs("../../dev/policy.toml")
	require.NoError(t, err)
	own := filepath.Join(t.TempDir(), "policy.toml")
	data, err := os.ReadFile(policy)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(own, data, 0o600))
	for _, u := range []string{"https://ops.example/quarantine", "http://127.0.0.1:8080/console/", "https://ops.example/?tenant=acme"} {
		t.Run(u, func(t *testing.T) {
			e := env(map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1/db", "OIDC_ISSUER": "https://idp.example", "OIDC_CLIENT_ID": "c",
				"AUDIT_SIGNING_KEY_FILE": key, "POLICY_FILE": own, "CONSOLE_PUBLIC_URL": u})
			_, err := parseServe(nil, e, &bytes.Buffer{})
			if assert.Error(t, err, "CONSOLE_PUBLIC_URL %q is taken, though the console serves every page, redirect and cookie at / only", u) {
				assert.Contains(t, err.Error(), "CONSOLE_PUBLIC_URL")
			}
		})
	}
}

// TestRevOps12MisspeltSettingIsNamed (review revops12): every setting is
// read from an exact environment variable name, and a variable whose name
// is close to a setting's but is none is ignored without a word. Some
// such slips weaken the deploy silently: METRICS_TOKEN (the setting is
// METRICS_TOKEN_FILE) leaves /metrics on an internal METRICS_ADDR open to
// anyone who reaches it, TRUSTED_PROXY (TRUSTED_PROXIES) writes the
// proxy's address as every person's in the audit log, INGEST_BATCH (the
// flag is --ingest-batch, the variable INGEST_BATCH_SIZE) runs batches of
// 1000. A variable under one of the console's own prefixes that no
// command reads should at least be named at start (a warning, or a
// refusal), with the setting it may have meant.
//
// The environment is the process's (t.Setenv): a check for unknown
// variables has to list them, which getenv cannot.
func TestRevOps12MisspeltSettingIsNamed(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key.pem")
	require.NoError(t, run(context.Background(), []string{"console", "audit", "keygen", "--out", key}, env(nil), &bytes.Buffer{}, &bytes.Buffer{}))
	for _, c := range []struct{ typo, value string }{
		{"METRICS_TOKEN", "s3cret"},
		{"TRUSTED_PROXY", "10.0.0.0/8"},
		{"INGEST_BATCH", "200"},
	} {
		t.Run(c.typo, func(t *testing.T) {
			for k, v := range map[string]string{
				// A database that refuses at once: serve gets past its
				// settings and fails on the connection.
				"DATABASE_URL": "postgres://x@127.0.0.1:1/db", "DATABASE_WAIT": "0s",
				"OIDC_ISSUER": "http://127.0.0.1:1/dex", "OIDC_CLIENT_ID": "c", "AUDIT_SIGNING_KEY_FILE": key,
				"METRICS_ADDR": "off", "CONSOLE_ADDR": "127.0.0.1:0", "NATS_EMBEDDED_ADDR": "127.0.0.1:0",
				"NATS_EMBEDDED_DIR": t.TempDir(), c.typo: c.value,
			} {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"console", "serve"}, os.Getenv, &stdout, &stderr, os.Environ()...)
			out := stdout.String() + stderr.String()
			if err != nil {
				out += err.Error()
			}
			assert.Regexp(t, regexp.MustCompile(regexp.QuoteMeta(c.typo)+`([^A-Z_]|$)`), out,
				"%s=%s is ignored without a word: nothing at start names it", c.typo, c.value)
		})
	}
}
