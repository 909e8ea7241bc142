package authz

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRevAuth26CallbackRefusesASignInStartedTooLongAgo (review 26a): a
// sign-in whose flow began more than flowTTL ago is refused at the
// callback, even with a genuine code, state and nonce: a code and flow
// cookie left behind (a shared machine, a callback URL in a history) do
// not sign anyone in later. One just inside the time signs in.
func TestRevAuth26CallbackRefusesASignInStartedTooLongAgo(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	late := b.atProvider(t, b.authorize(t))
	b.login.now = func() time.Time { return time.Now().Add(flowTTL + time.Minute) }
	resp := b.get(t, late.String())
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, b.body(t, resp), "the sign-in took too long; start again")
	assert.False(t, b.signedIn(t), "a sign-in past its time signs nobody in")
	assert.Equal(t, float64(1), b.denials.Total(DenialLoginFlow), "the refusal is counted")
	assert.Zero(t, b.auditRows(t, "ok"))

	b.login.now = time.Now
	inTime := b.atProvider(t, b.authorize(t))
	b.login.now = func() time.Time { return time.Now().Add(flowTTL - time.Minute) }
	resp = b.get(t, inTime.String())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, b.body(t, resp))
	assert.True(t, b.signedIn(t))
}

// TestRevAuth26SignInFlowCookieIsHttpOnlyLaxAndShortLived (review 26a):
// the cookie that carries a sign-in's state, nonce and PKCE verifier is
// out of reach of scripts (HttpOnly), sent back only on the provider's
// top-level redirect (SameSite=Lax, not None), for the whole site (Path
// "/"), gone after flowTTL; over https it is Secure and __Host- prefixed.
func TestRevAuth26SignInFlowCookieIsHttpOnlyLaxAndShortLived(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	resp := b.get(t, b.srv.URL+"/auth/login?return_to=/audit")
	require.Equal(t, http.StatusFound, resp.StatusCode)
	check := func(name string, cookies []*http.Cookie, prefix string, secure bool) {
		t.Helper()
		var flows []*http.Cookie
		for _, c := range cookies {
			if strings.HasPrefix(c.Name, prefix) {
				flows = append(flows, c)
			}
		}
		require.Len(t, flows, 1, "%s: one flow cookie", name)
		c := flows[0]
		assert.True(t, c.HttpOnly, "%s: HttpOnly", name)
		assert.Equal(t, http.SameSiteLaxMode, c.SameSite, "%s: SameSite=Lax", name)
		assert.Equal(t, "/", c.Path, "%s: path", name)
		assert.Equal(t, int(flowTTL/time.Second), c.MaxAge, "%s: gone after flowTTL", name)
		assert.Equal(t, secure, c.Secure, "%s: Secure", name)
	}
	check("http", resp.Cookies(), loginCookiePrefix, false)

	// Over https (a Login whose sessions are Secure).
	sessions, stop := NewSessions(b.db.Pool, SessionConfig{Secure: true})
	t.Cleanup(stop)
	login, err := NewLogin(context.Background(), OIDCConfig{
		Issuer: b.idp.Issuer, ClientID: b.idp.ClientID, ClientSecret: b.idp.ClientSecret,
		RedirectURL: "https://console.example/auth/callback",
	}, 5*time.Second, sessions, b.db.Pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	require.NoError(t, login.Start(echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/auth/login", nil), rec)))
	require.Equal(t, http.StatusFound, rec.Code)
	check("https", rec.Result().Cookies(), secureLoginCookiePrefix, true)
}

// TestRevAuth26EmailBindingRefusesAnAddressWithAName (review 26a): an
// admin who pastes an address as mail programs show it ("Ada Lovelace
// <ada@example.com>") is told it is not an address; it is not stored as a
// binding that matches nobody (the admin told "Binding added" while Ada
// gets no role). The bare address binds her.
func TestRevAuth26EmailBindingRefusesAnAddressWithAName(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	admin := User{Actor: quarantine.Actor{Issuer: "i", Subject: "admin", Email: "admin@example.com", EmailVerified: true}}
	ada := User{Actor: quarantine.Actor{Issuer: "i", Subject: "ada", Email: "ada@example.com", EmailVerified: true}}
	bindings := NewBindings(db.Pool)
	for _, typed := range []string{"Ada Lovelace <ada@example.com>", "<ada@example.com>", "ada@example.com (Ada)"} {
		_, err := bindings.Add(ctx, BindingInput{Email: typed, Role: RoleOncall, Tenant: "acme"}, admin, audit.Event{})
		require.Error(t, err, typed)
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%s: %v", typed, err)
		assert.Contains(t, err.Error(), "This is not an email address.", typed)
	}
	all, err := bindings.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, all, "no binding that matches nobody is stored")

	_, err = bindings.Add(ctx, BindingInput{Email: "ada@example.com", Role: RoleOncall, Tenant: "acme"}, admin, audit.Event{})
	require.NoError(t, err)
	access := newAccess(t, db, GroupMap{})
	assert.True(t, access.Can(ada, "acme", ObjDeadLetter, ActRead), "the bare address binds her")
}

// TestRevAuth26CallbackRefusesAnExpiredIDToken: the ID token's expiry is
// checked at the callback (the provider's tokens here last 24 hours): a
// sign-in whose token has expired by the console's clock is refused and
// signs nobody in, counted as a token refusal; one an hour inside its
// life signs in. With the verifier's expiry check skipped, the expired
// token signed in.
func TestRevAuth26CallbackRefusesAnExpiredIDToken(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	// The whole sign-in a day and an hour ahead: inside its own time
	// limit, past the token's.
	b.login.now = func() time.Time { return time.Now().Add(25 * time.Hour) }
	resp := b.get(t, b.atProvider(t, b.authorize(t)).String())
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, b.body(t, resp), "the ID token could not be verified")
	assert.False(t, b.signedIn(t), "an expired ID token signs nobody in")
	assert.Equal(t, float64(1), b.denials.Total(DenialLoginToken), "the refusal is counted")
	assert.Zero(t, b.auditRows(t, "ok"))

	b.login.now = func() time.Time { return time.Now().Add(23 * time.Hour) }
	resp = b.get(t, b.atProvider(t, b.authorize(t)).String())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, b.body(t, resp))
	assert.True(t, b.signedIn(t))
}
