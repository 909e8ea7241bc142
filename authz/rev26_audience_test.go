package authz

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

// TestRevAuth26CallbackRefusesAnIDTokenForAnotherClient: an ID token the
// provider signed for another application (another audience) is refused
// at the callback, even carrying this sign-in's nonce: a token an
// attacker's app at the same provider obtained does not sign anyone in
// here. The token is real: Dex signs it for a second client, through that
// client's own sign-in and code exchange, and it stands in for the one
// Dex gives the console at its exchange. With the verifier's audience
// check skipped, it signed in.
func TestRevAuth26CallbackRefusesAnIDTokenForAnotherClient(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	ctx := context.Background()
	b.idp.AddClient(t, "other-app", "other-secret")
	auth := b.authorize(t) // this sign-in: its state, nonce and PKCE challenge

	// The other application's sign-in of the same person, with this
	// sign-in's nonce, and its own code exchange.
	const otherCallback = "http://127.0.0.1:9/callback" // never followed
	other := withQuery(withQuery(withQuery(withQuery(auth, "client_id", "other-app"), "redirect_uri", otherCallback),
		"code_challenge", ""), "code_challenge_method", "")
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	cb := b.idp.SignIn(t, &http.Client{Jar: jar}, other.String(), *b.user)
	code := cb.Query().Get("code")
	require.NotEmpty(t, code, "the other application's code: %s", cb)
	tok, err := (&oauth2.Config{ClientID: "other-app", ClientSecret: "other-secret", RedirectURL: otherCallback,
		Endpoint: oauth2.Endpoint{TokenURL: b.idp.Issuer + "/token"}}).Exchange(ctx, code)
	require.NoError(t, err)
	foreign, _ := tok.Extra("id_token").(string)
	require.NotEmpty(t, foreign, "an ID token for the other application")

	// The console's own exchange answered with it.
	b.idp.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != b.idp.TokenPath() {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["id_token"] == nil {
				w.WriteHeader(http.StatusBadGateway) // not an answer to swap: the test fails below
				return
			}
			body["id_token"] = foreign
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rec.Code)
			_ = json.NewEncoder(w).Encode(body)
		})
	})
	resp := b.get(t, b.atProvider(t, auth).String())
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, b.body(t, resp), "the ID token could not be verified")
	assert.False(t, b.signedIn(t), "a token for another audience signs nobody in")
	assert.Equal(t, float64(1), b.denials.Total(DenialLoginToken), "the refusal is counted")
	assert.Zero(t, b.auditRows(t, "ok"))
}
