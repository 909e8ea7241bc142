package main

import (
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixOps13PublicURLInCapitalsIsStoredLowerAndCountsAsHTTPS: the
// stored CONSOLE_PUBLIC_URL has its scheme and host in lower case, so the
// callback built on it is too; TLS_TERMINATED takes an HTTPS:// one; and
// a console served over https on its embedded NATS server (NATS_URL left
// out, or misspelt NATS_URLS) says so loudly at start.
func TestFixOps13PublicURLInCapitalsIsStoredLowerAndCountsAsHTTPS(t *testing.T) {
	t.Parallel()
	const public = "HTTPS://Console.Example.COM/"
	own := ownPolicyFile(t)
	c, err := parseServe(nil, env(map[string]string{"DATABASE_URL": "postgres://x@h/db", "OIDC_ISSUER": "https://idp.example.com", "OIDC_CLIENT_ID": "c",
		"AUDIT_SIGNING_KEY_FILE": newKeyFile(t), "CONSOLE_PUBLIC_URL": public, "TLS_TERMINATED": "true", "POLICY_FILE": own}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "https://console.example.com", c.PublicURL)
	assert.True(t, c.Secure())

	_, base, logged := startApp(t, map[string]string{"CONSOLE_PUBLIC_URL": public, "POLICY_FILE": own, "NATS_URLS": "nats://n1:4222"})
	resp, _ := httpGet(t, base+"/auth/login", nil)
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, "https://console.example.com/auth/callback", loc.Query().Get("redirect_uri"))
	assert.Contains(t, logged.String(), "runs an embedded NATS server of its own, yet it is served over https")
}
