package testidp

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

type claims struct {
	Sub           string   `json:"sub"`
	Name          *string  `json:"name"`
	Email         *string  `json:"email"`
	EmailVerified *bool    `json:"email_verified"`
	Groups        []string `json:"groups"`
}

// TestDexSignsInTheDirectorysPeople: a relying party (go-oidc and oauth2,
// as the console uses them) signs people in through Dex's login page and
// reads, from ID tokens it verifies, what the directory says of them: a
// verified and an unverified email, none, the name, the groups; a refresh reads the
// directory again, and finds the account made again under the same login
// as another subject.
func TestDexSignsInTheDirectorysPeople(t *testing.T) {
	ctx := context.Background()
	p := Start(t)
	rp := httptest.NewServer(http.NotFoundHandler()) // the callback's address; the test reads the code from the redirect
	t.Cleanup(rp.Close)
	provider, err := oidc.NewProvider(ctx, p.Issuer)
	require.NoError(t, err)
	conf := oauth2.Config{ClientID: p.ClientID, ClientSecret: p.ClientSecret, RedirectURL: rp.URL + "/auth/callback",
		Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", "profile", "groups", oidc.ScopeOfflineAccess}}
	verifier := provider.Verifier(&oidc.Config{ClientID: p.ClientID})
	read := func(tok *oauth2.Token) claims {
		t.Helper()
		raw, ok := tok.Extra("id_token").(string)
		require.True(t, ok, "an ID token")
		idt, err := verifier.Verify(ctx, raw)
		require.NoError(t, err)
		var c claims
		require.NoError(t, idt.Claims(&c))
		return c
	}
	signIn := func(person Person) *oauth2.Token {
		t.Helper()
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		verifier := oauth2.GenerateVerifier()
		cb := p.SignIn(t, &http.Client{Jar: jar}, conf.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier)), person)
		require.Equal(t, rp.URL+"/auth/callback", cb.Scheme+"://"+cb.Host+cb.Path)
		require.Equal(t, "state-1", cb.Query().Get("state"))
		tok, err := conf.Exchange(ctx, cb.Query().Get("code"), oauth2.VerifierOption(verifier))
		require.NoError(t, err)
		return tok
	}

	ada := Person{ID: "ada", Email: "ada@example.com", EmailVerified: true, Groups: []string{"acme:oncall"}}
	tok := signIn(ada)
	c := read(tok)
	assert.Equal(t, Subject("ada"), c.Sub)
	assert.Equal(t, "ada", UserID(c.Sub))
	require.NotNil(t, c.Email)
	assert.Equal(t, "ada@example.com", *c.Email)
	require.NotNil(t, c.EmailVerified)
	assert.True(t, *c.EmailVerified)
	assert.Equal(t, []string{"acme:oncall"}, c.Groups)
	assert.Nil(t, c.Name, "no name in the directory, none in the token")

	c = read(signIn(Person{ID: "claimant", Email: "ada@example.com", Groups: []string{"acme:approver"}}))
	assert.Equal(t, Subject("claimant"), c.Sub, "one email, another subject")
	require.NotNil(t, c.EmailVerified)
	assert.False(t, *c.EmailVerified)

	c = read(signIn(Person{ID: "svc-7", Name: "Deployer 7"}))
	assert.Nil(t, c.Email, "no email in the directory, none in the token")
	require.NotNil(t, c.Name)
	assert.Equal(t, "Deployer 7", *c.Name)

	// A refresh reads the directory as it is now.
	ada.Groups = []string{"acme:viewer"}
	p.Add(ada)
	tok.Expiry = tok.Expiry.Add(-48 * 60 * 60 * 1e9)
	tok, err = conf.TokenSource(ctx, tok).Token()
	require.NoError(t, err)
	c = read(tok)
	assert.Equal(t, Subject("ada"), c.Sub)
	assert.Equal(t, []string{"acme:viewer"}, c.Groups)

	// Her account made again under her login: the refresh is another subject.
	p.Add(Person{Login: "ada", ID: "ada-2", Email: "ada@example.com", EmailVerified: true})
	tok.Expiry = tok.Expiry.Add(-48 * 60 * 60 * 1e9)
	tok, err = conf.TokenSource(ctx, tok).Token()
	require.NoError(t, err)
	assert.Equal(t, Subject("ada-2"), read(tok).Sub)

	// Removed: the refresh is refused.
	p.Remove("ada")
	tok.Expiry = tok.Expiry.Add(-48 * 60 * 60 * 1e9)
	_, err = conf.TokenSource(ctx, tok).Token()
	assert.Error(t, err)

	assert.Equal(t, "not-dex", UserID("not-dex"), "a subject Dex did not encode is itself")
}

// TestSameDexAsMakeRun: the Dex the Go tests run in process is the one
// `make run` and the e2e tests build (tools/dex): one version in both
// go.mod files.
func TestSameDexAsMakeRun(t *testing.T) {
	version := func(gomod string) string {
		t.Helper()
		data, err := os.ReadFile(gomod)
		require.NoError(t, err)
		m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/dexidp/dex (\S+)`).FindStringSubmatch(string(data))
		require.NotNil(t, m, "%s requires Dex", gomod)
		return m[1]
	}
	assert.Equal(t, version("../tools/dex/go.mod"), version("../go.mod"))
}
