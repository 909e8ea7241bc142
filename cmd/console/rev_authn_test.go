package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHTTPSConsoleRefusesPlainHTTPIdentityProvider (review rev-authn): a
// console served over https (Secure cookies, HSTS) accepts an identity
// provider reached over plain http on another machine without a word:
// discovery, the JWKS that verify every ID token, the code exchange with
// the client secret and every refresh token travel unencrypted, so whoever
// is on the path can hand the console keys of their own and sign in as
// anyone with any group ("quarantine:*:admin"). Only the console's own
// http URL is warned about (warnIfInsecure); the issuer is checked only
// for being an http(s) URL.
func TestHTTPSConsoleRefusesPlainHTTPIdentityProvider(t *testing.T) {
	t.Parallel()
	_, err := parseServe(nil, env(map[string]string{
		"DATABASE_URL": "postgres://x@h/db", "OIDC_CLIENT_ID": "c", "AUDIT_SIGNING_KEY_FILE": newKeyFile(t),
		"CONSOLE_PUBLIC_URL": "https://console.example.com",
		"OIDC_ISSUER":        "http://idp.example.com/dex",
	}), io.Discard)
	assert.ErrorContains(t, err, "OIDC_ISSUER", "an https console signing people in through a plain-http provider elsewhere starts silently")
}

// TestHTTPSConsoleNeedsItsOwnPolicyFile (review rev-authn, low): POLICY_FILE
// defaults to dev/policy.toml, relative to the working directory; a
// production-like serve (https public URL) started where that file exists
// (a checkout, an image built from the repository) runs the development
// table without a warning (app logs "replay policy loaded" at info).
func TestHTTPSConsoleNeedsItsOwnPolicyFile(t *testing.T) {
	t.Parallel()
	cfg, err := parseServe(nil, env(map[string]string{
		"DATABASE_URL": "postgres://x@h/db", "OIDC_CLIENT_ID": "c", "AUDIT_SIGNING_KEY_FILE": newKeyFile(t),
		"CONSOLE_PUBLIC_URL": "https://console.example.com", "OIDC_ISSUER": "https://idp.example.com",
	}), io.Discard)
	if err == nil {
		assert.NotEqual(t, "dev/policy.toml", cfg.Replay.PolicyFile, "serve outside development took the development policy table by default")
	}
}
