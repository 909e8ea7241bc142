package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/quarantine-console/quarantine/app"
)

// devPolicyFile is POLICY_FILE's default: the development table of a
// checkout, relative to the working directory.
const devPolicyFile = "dev/policy.toml"

// checkProduction refuses, at start, what an https console (an https
// CONSOLE_PUBLIC_URL; TLS_TERMINATED requires one) must not run with,
// though a development console over http may:
//
//   - an identity provider (OIDC_ISSUER) or a callback (OIDC_REDIRECT_URL)
//     over plain http on a host other than loopback: discovery, the keys
//     that verify every ID token, the client secret and the refresh tokens
//     would travel unencrypted, so whoever is on the path could sign in as
//     anyone, with any group;
//   - the development policy table: POLICY_FILE left at its default, or
//     set to dev/policy.toml.
//
// s is what was parsed: it tells a setting given from its default.
func checkProduction(c serveConfig, s *settings) error {
	if !c.Secure() {
		return nil
	}
	if plainHTTPElsewhere(c.OIDC.Issuer) {
		return fmt.Errorf("OIDC_ISSUER (--oidc-issuer) %q: the console is served over https (CONSOLE_PUBLIC_URL %s) "+
			"but would reach its identity provider over plain http on another machine, where the provider's keys, the client secret "+
			"and refresh tokens can be read and replaced on the way; use the provider's https:// issuer", c.OIDC.Issuer, c.PublicURL)
	}
	if plainHTTPElsewhere(c.OIDC.RedirectURL) {
		return fmt.Errorf("OIDC_REDIRECT_URL (--oidc-redirect-url) %q: the console is served over https (CONSOLE_PUBLIC_URL %s) "+
			"but its sign-in callback is plain http; use the https:// URL of /auth/callback, or leave it empty", c.OIDC.RedirectURL, c.PublicURL)
	}
	if !(s.getenv("POLICY_FILE") != "" || s.given("policy-file")) || isDevPolicy(c.Replay.PolicyFile) {
		return fmt.Errorf("POLICY_FILE (--policy-file) %q: the console is served over https (CONSOLE_PUBLIC_URL %s) "+
			"but would judge replays by the development policy table (%s, the default); "+
			"set POLICY_FILE to your own policy file (docs/replay.md)", c.Replay.PolicyFile, c.PublicURL, devPolicyFile)
	}
	return nil
}

// plainHTTPElsewhere reports whether raw is an http:// URL of a host other
// than loopback (a provider on the console's own machine is reached
// without leaving it).
func plainHTTPElsewhere(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "http" && !app.IsLoopback(u.Hostname())
}

// isDevPolicy reports whether path names the checkout's development table.
func isDevPolicy(path string) bool {
	p := filepath.ToSlash(filepath.Clean(path))
	return p == devPolicyFile || strings.HasSuffix(p, "/"+devPolicyFile)
}
