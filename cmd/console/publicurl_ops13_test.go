package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevOps13PublicURLSchemeInCapitals: checkPublicURL takes
// CONSOLE_PUBLIC_URL=HTTPS://console.example.com (url.Parse folds the
// scheme), but what it decides is read with strings.HasPrefix(…,
// "https://"): the production checks (production_checks.go:30) are
// skipped, so an http identity provider on another machine and the
// development policy table are taken, and the session cookie is not Secure
// (no __Host- prefix) and no HSTS is sent (app/app.go:284). Either the
// scheme is refused/normalised, or it counts as https everywhere.
func TestRevOps13PublicURLSchemeInCapitals(t *testing.T) {
	t.Parallel()
	base := map[string]string{"DATABASE_URL": "postgres://x@h/db", "OIDC_CLIENT_ID": "c", "AUDIT_SIGNING_KEY_FILE": newKeyFile(t)}
	for _, public := range []string{"https://console.example.com", "HTTPS://console.example.com", "Https://console.example.com"} {
		e := map[string]string{"CONSOLE_PUBLIC_URL": public, "OIDC_ISSUER": "http://idp.example.com/dex"}
		for k, v := range base {
			e[k] = v
		}
		_, err := parseServe(nil, env(e), io.Discard)
		assert.Error(t, err, "%s: an https console reaching its identity provider over plain http on another machine is taken", public)
	}

	// And the console it starts sends its cookies without Secure.
	_, url, _ := startApp(t, map[string]string{"CONSOLE_PUBLIC_URL": "HTTPS://console.example.com", "POLICY_FILE": ownPolicyFile(t)})
	resp, _ := httpGet(t, url+"/auth/login", nil)
	require.Equal(t, http.StatusFound, resp.StatusCode)
	var login *http.Cookie
	for _, c := range resp.Cookies() {
		if strings.Contains(c.Name, "quarantine_login_") {
			login = c
		}
	}
	require.NotNil(t, login)
	assert.True(t, login.Secure, "sign-in cookie of an https console is not Secure: %s", login.Name)
	assert.True(t, strings.HasPrefix(login.Name, "__Host-"), login.Name)
	hresp, _ := httpGet(t, url+"/healthz", nil)
	assert.Equal(t, "max-age=31536000", hresp.Header.Get("Strict-Transport-Security"))
}
