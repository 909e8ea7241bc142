package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ownPolicyFile copies the development policy table to a file of the
// test's own, as a deployment ships its table: an https console refuses
// dev/policy.toml.
func ownPolicyFile(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../" + devPolicyFile)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "policy.toml")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// TestProductionChecks: what an https console refuses to start with, and
// what it (and an http one) accepts.
func TestProductionChecks(t *testing.T) {
	t.Parallel()
	own := ownPolicyFile(t)
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		fails string // "" when it starts
	}{
		{"HTTPSWithHTTPSIssuer", map[string]string{"OIDC_ISSUER": "https://idp.example.com", "POLICY_FILE": own}, nil, ""},
		{"HTTPSWithLoopbackHTTPIssuer", map[string]string{"OIDC_ISSUER": "http://127.0.0.1:5556/dex", "POLICY_FILE": own}, nil, ""},
		{"HTTPSWithLocalhostHTTPIssuer", map[string]string{"OIDC_ISSUER": "http://localhost:5556/dex", "POLICY_FILE": own}, nil, ""},
		{"HTTPSWithHTTPIssuerElsewhere", map[string]string{"OIDC_ISSUER": "http://idp.example.com", "POLICY_FILE": own}, nil, "OIDC_ISSUER (--oidc-issuer)"},
		{"HTTPSWithHTTPCallback", map[string]string{"OIDC_ISSUER": "https://idp.example.com", "POLICY_FILE": own,
			"OIDC_REDIRECT_URL": "http://console.example.com/auth/callback"}, nil, "OIDC_REDIRECT_URL (--oidc-redirect-url)"},
		{"HTTPSWithDefaultPolicy", map[string]string{"OIDC_ISSUER": "https://idp.example.com"}, nil, "POLICY_FILE (--policy-file)"},
		{"HTTPSWithDevPolicyByEnv", map[string]string{"OIDC_ISSUER": "https://idp.example.com", "POLICY_FILE": "./dev/policy.toml"}, nil, "POLICY_FILE (--policy-file)"},
		{"HTTPSWithDevPolicyByPath", map[string]string{"OIDC_ISSUER": "https://idp.example.com", "POLICY_FILE": "/src/quarantine/dev/policy.toml"}, nil, "POLICY_FILE (--policy-file)"},
		{"HTTPSWithPolicyFlag", map[string]string{"OIDC_ISSUER": "https://idp.example.com"}, []string{"--policy-file", own}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{"DATABASE_URL": "postgres://x@h/db", "OIDC_CLIENT_ID": "c", "AUDIT_SIGNING_KEY_FILE": newKeyFile(t),
				"CONSOLE_PUBLIC_URL": "https://console.example.com"}
			for k, v := range tc.env {
				e[k] = v
			}
			_, err := parseServe(tc.args, env(e), io.Discard)
			if tc.fails == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.fails)
			}
		})
	}
	// A development console over http (make run, the e2e tests) keeps its
	// defaults: dev/policy.toml and a plain-http provider elsewhere.
	t.Run("HTTPConsoleKeepsDefaults", func(t *testing.T) {
		cfg, err := parseServe(nil, env(map[string]string{"DATABASE_URL": "postgres://x@h/db", "OIDC_CLIENT_ID": "c",
			"AUDIT_SIGNING_KEY_FILE": newKeyFile(t), "OIDC_ISSUER": "http://idp.example.com"}), io.Discard)
		require.NoError(t, err)
		assert.Equal(t, devPolicyFile, cfg.Replay.PolicyFile)
	})
}
