package authz

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefreshRefusingTheConsoleRevokesNobody: the provider refuses the
// console itself at a refresh (here Dex's own answer to a wrong client
// secret, 401 invalid_client: a secret rotated at the provider before the
// console's configuration). That says nothing about the person: her
// session ends, since her groups are due and cannot be read, but she is
// not revoked (her groups kept, her approved replays not blocked), as for
// an outage. Only an answer about the grant (invalid_grant, and Dex's
// invalid_request for a connector that refuses the person) refuses her.
func TestRefreshRefusingTheConsoleRevokesNobody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	b.signIn(t)
	var refreshes int
	b.idp.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == b.idp.TokenPath() {
				body, err := io.ReadAll(r.Body)
				require.NoError(t, err)
				form, err := url.ParseQuery(string(body))
				require.NoError(t, err)
				if form.Get("grant_type") == "refresh_token" {
					refreshes++
					if id, _, ok := r.BasicAuth(); ok {
						r.SetBasicAuth(id, "not-the-secret")
					}
					if form.Has("client_secret") {
						form.Set("client_secret", "not-the-secret")
					}
				}
				enc := form.Encode()
				r.Body, r.ContentLength = io.NopCloser(strings.NewReader(enc)), int64(len(enc))
				r.Header.Set("Content-Length", strconv.Itoa(len(enc)))
			}
			next.ServeHTTP(w, r)
		})
	})
	b.ageSessions(t)
	_, ok := b.me(t)
	require.False(t, ok, "groups due and the refresh refused: the session ends")
	require.NotZero(t, refreshes, "the provider was asked")
	e, err := NewDirectory(b.db.Pool).Lookup(ctx, b.idp.Issuer, adaSub)
	require.NoError(t, err)
	assert.True(t, e.RevokedAt.IsZero(), "the provider refused the console's client, not her, yet she was revoked (%q)", e.RevokedReason)
	assert.NotEmpty(t, e.Groups, "her groups are kept")
}
