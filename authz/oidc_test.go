package authz

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testidp"
)

type loginBundle struct {
	db      *testdb.DB
	idp     *testidp.IdP
	srv     *httptest.Server
	client  *http.Client
	login   *Login
	denials *AnonymousDenials
	user    *testidp.Person // who signs in at the provider (put in its directory at each sign-in; b.idp.Add after a change, for a refresh to read)
	// atToken, when set, runs at the provider's token endpoint before it
	// answers (a code exchange or a refresh), once: what happens elsewhere
	// while the provider is being asked.
	atToken atomic.Pointer[func()]
}

// setupLogin runs the login handlers behind real sessions, against Dex
// (testidp: the real provider, PKCE checks and all).
func setupLogin(t *testing.T) *loginBundle {
	t.Helper()
	b := &loginBundle{db: testdb.New(t)}
	var err error
	b.idp = testidp.Start(t)
	b.idp.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == b.idp.TokenPath() {
				if fn := b.atToken.Swap(nil); fn != nil {
					(*fn)()
				}
			}
			next.ServeHTTP(w, r)
		})
	})

	sessions, stop := NewSessions(b.db.Pool, SessionConfig{})
	t.Cleanup(stop)
	e := echo.New()
	var login *Login
	b.denials = NewAnonymousDenials(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	e.GET("/auth/login", func(c echo.Context) error { return login.Start(c) })
	e.GET("/auth/callback", func(c echo.Context) error {
		if err := login.Callback(c); err != nil {
			return c.String(http.StatusBadRequest, err.Error())
		}
		return nil
	})
	e.POST("/auth/logout", func(c echo.Context) error {
		if err := login.Logout(c, "/signed-out"); err != nil {
			return c.String(http.StatusInternalServerError, err.Error())
		}
		return nil
	})
	e.GET("/me", func(c echo.Context) error {
		u, ok, err := login.Current(c.Request().Context())
		if err != nil {
			return err
		}
		if !ok {
			return c.NoContent(http.StatusUnauthorized)
		}
		return c.JSON(http.StatusOK, u)
	})
	b.srv = httptest.NewServer(sessions.LoadAndSave(e))
	t.Cleanup(b.srv.Close)

	login, err = NewLogin(context.Background(), OIDCConfig{
		Issuer: b.idp.Issuer, ClientID: b.idp.ClientID, ClientSecret: b.idp.ClientSecret,
		RedirectURL:     b.srv.URL + "/auth/callback",
		RefreshInterval: time.Hour,
	}, 5*time.Second, sessions, b.db.Pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	login.CountDenialsIn(b.denials)
	login.RememberIn(NewDirectory(b.db.Pool))
	b.login = login

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	b.client = &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	b.user = &testidp.Person{ID: "u-1", Email: "ada@example.com", EmailVerified: true, Groups: []string{"acme:oncall"}}
	return b
}

// adaSub is the sub claim Dex gives b.user, u-1 in its directory.
var adaSub = testidp.Subject("u-1")

func (b *loginBundle) get(t *testing.T, u string) *http.Response {
	t.Helper()
	resp, err := b.client.Get(u)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// authorize starts a sign-in and returns the provider's authorization URL.
func (b *loginBundle) authorize(t *testing.T) *url.URL {
	t.Helper()
	resp := b.get(t, b.srv.URL+"/auth/login?return_to=/audit")
	require.Equal(t, http.StatusFound, resp.StatusCode)
	u, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	q := u.Query()
	require.NotEmpty(t, q.Get("state"))
	require.NotEmpty(t, q.Get("nonce"))
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	return u
}

// atProvider follows the authorization URL, signs b.user in at the
// provider's login page and returns the callback URL the provider sends
// the browser to.
func (b *loginBundle) atProvider(t *testing.T, authURL *url.URL) *url.URL {
	t.Helper()
	cb := b.idp.SignIn(t, b.client, authURL.String(), *b.user)
	require.NotEmpty(t, cb.Query().Get("code"))
	return cb
}

func (b *loginBundle) body(t *testing.T, resp *http.Response) string {
	t.Helper()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(data)
}

func (b *loginBundle) signedIn(t *testing.T) bool {
	t.Helper()
	return b.get(t, b.srv.URL+"/me").StatusCode == http.StatusOK
}

func (b *loginBundle) auditRows(t *testing.T, outcome string) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM audit_log WHERE action = 'auth.login' AND outcome = $1", outcome).Scan(&n))
	return n
}

func withQuery(u *url.URL, key, value string) *url.URL {
	c := *u
	q := c.Query()
	if value == "" {
		q.Del(key)
	} else {
		q.Set(key, value)
	}
	c.RawQuery = q.Encode()
	return &c
}

func TestCallbackSucceeds(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	cb := b.atProvider(t, b.authorize(t))
	resp := b.get(t, cb.String())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, b.body(t, resp))
	assert.Equal(t, "/audit", resp.Header.Get("Location"), "back where the sign-in started")
	me := b.get(t, b.srv.URL+"/me")
	require.Equal(t, http.StatusOK, me.StatusCode)
	var u User
	require.NoError(t, json.NewDecoder(me.Body).Decode(&u))
	assert.Equal(t, adaSub, u.Subject)
	assert.Equal(t, "ada@example.com", u.Email)
	assert.True(t, u.EmailVerified)
	assert.Equal(t, []string{"acme:oncall"}, u.Groups)
	assert.Equal(t, 1, b.auditRows(t, "ok"), "the sign-in is audited")
}

func TestCallbackRejectsState(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	cb := b.atProvider(t, b.authorize(t))

	for name, bad := range map[string]*url.URL{
		"Missing": withQuery(cb, "state", ""),
		"Wrong":   withQuery(cb, "state", "forged-state"),
	} {
		resp := b.get(t, bad.String())
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, name)
		assert.Contains(t, b.body(t, resp), "state is missing, unknown or already used", name)
		assert.False(t, b.signedIn(t), name)
	}
	// The genuine callback still works once...
	require.Equal(t, http.StatusSeeOther, b.get(t, cb.String()).StatusCode)
	// ...and only once: replaying the code and state is refused.
	replay := b.get(t, cb.String())
	assert.Equal(t, http.StatusBadRequest, replay.StatusCode)
	assert.Contains(t, b.body(t, replay), "already used")
	// Nobody signed in: refusals are counted and logged, never audited, so
	// strangers cannot grow the permanent log.
	assert.Zero(t, b.auditRows(t, "denied"), "anonymous refusals are not audited")
	assert.Equal(t, float64(3), b.denials.Total(DenialLoginState), "each refusal is counted")
}

func TestCallbackRejectsNonce(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	// An attacker's authorization request: the ID token carries another nonce.
	cb := b.atProvider(t, withQuery(b.authorize(t), "nonce", "attacker-nonce"))
	resp := b.get(t, cb.String())
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, b.body(t, resp), "nonce mismatch")
	assert.False(t, b.signedIn(t))
}

func TestCallbackRejectsPKCE(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	// The code was issued for another verifier's challenge: the provider
	// refuses our verifier at the token endpoint.
	other := "Uq2CQrq-fS7wYbEVJZpZ7HnJ3fXaBFAxn6JTY6lmYjA"
	cb := b.atProvider(t, withQuery(b.authorize(t), "code_challenge", other))
	resp := b.get(t, cb.String())
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, b.body(t, resp), "did not accept the sign-in code")
	assert.False(t, b.signedIn(t))
}

func TestSessionRenewedAtLogin(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	srvURL, err := url.Parse(b.srv.URL)
	require.NoError(t, err)
	cookie := func() string {
		for _, c := range b.client.Jar.Cookies(srvURL) {
			if c.Name == SessionCookie {
				return c.Value
			}
		}
		return ""
	}
	// The browser has a session already (signed in before, say, or a
	// token planted by someone else): signing in replaces it.
	require.Equal(t, http.StatusSeeOther, b.get(t, b.atProvider(t, b.authorize(t)).String()).StatusCode)
	before := cookie()
	require.NotEmpty(t, before)
	cb := b.atProvider(t, b.authorize(t))
	assert.Equal(t, before, cookie(), "starting a sign-in leaves the session as it is")
	require.Equal(t, http.StatusSeeOther, b.get(t, cb.String()).StatusCode)
	after := cookie()
	require.NotEmpty(t, after)
	assert.NotEqual(t, before, after, "the session token changes at sign-in")
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM sessions WHERE token = $1", before).Scan(&n))
	assert.Zero(t, n, "the pre-login session is gone")
}

// TestLoginStoresNothingUntilCallback: GET /auth/login is anonymous, so a
// stranger may call it without end. It stores nothing: no session row and
// no user_sessions row until a callback succeeds; the flow lives in the
// browser's cookie, at most maxFlows of them per browser (the oldest go),
// and the newest still signs in.
func TestLoginStoresNothingUntilCallback(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	ctx := context.Background()
	rows := func() (sessions, userSessions int) {
		require.NoError(t, b.db.Pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM user_sessions)").Scan(&sessions, &userSessions))
		return sessions, userSessions
	}
	const flood = 200
	stranger := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range flood {
		resp, err := stranger.Get(b.srv.URL + "/auth/login?return_to=/" + strings.Repeat("x", 100))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusFound, resp.StatusCode)
		for _, c := range resp.Cookies() {
			require.NotEqual(t, SessionCookie, c.Name, "no session is started")
		}
	}
	s, us := rows()
	assert.Zero(t, s, "no session row for %d anonymous sign-ins started", flood)
	assert.Zero(t, us)

	// One browser starting more sign-ins than maxFlows keeps maxFlows of
	// them: the oldest is refused, the newest signs in.
	srvURL, err := url.Parse(b.srv.URL)
	require.NoError(t, err)
	var first, last *url.URL
	for i := range maxFlows + 2 {
		u := b.authorize(t)
		if i == 0 {
			first = u
		}
		last = u
	}
	flows := 0
	for _, c := range b.client.Jar.Cookies(srvURL) {
		if strings.HasPrefix(c.Name, loginCookiePrefix) {
			flows++
		}
	}
	assert.Equal(t, maxFlows, flows)
	s, us = rows()
	assert.Zero(t, s)
	assert.Zero(t, us)
	old := b.get(t, b.atProvider(t, first).String())
	assert.Equal(t, http.StatusBadRequest, old.StatusCode)
	assert.Contains(t, b.body(t, old), "missing, unknown or already used")
	require.Equal(t, http.StatusSeeOther, b.get(t, b.atProvider(t, last).String()).StatusCode)
	assert.True(t, b.signedIn(t))
	s, us = rows()
	assert.Equal(t, 1, s, "the session is stored when the sign-in succeeds")
	assert.Equal(t, 1, us)
}

// TestLoginReturnToBounded: a return path longer than maxReturnTo returns
// to "/" (the flow cookie stays small); a short one is kept.
func TestLoginReturnToBounded(t *testing.T) {
	assert.Equal(t, "/", returnTo("/"+strings.Repeat("a", maxReturnTo)))
	assert.Equal(t, "/audit?x=1", returnTo("/audit?x=1"))
	assert.Equal(t, "/", returnTo("https://evil.example/"))
}

// TestCallbackReturnsOnlyToALocalPath: the flow cookie the callback reads
// may not be the one Start wrote (a sibling host can toss one into the
// browser, for a sign-in it started itself): a return path in it that
// leaves the site is not followed; the sign-in lands on "/".
func TestCallbackReturnsOnlyToALocalPath(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	authURL := b.authorize(t)
	srvURL, err := url.Parse(b.srv.URL)
	require.NoError(t, err)
	name := loginCookiePrefix + authURL.Query().Get("state")
	var tossed *http.Cookie
	for _, c := range b.client.Jar.Cookies(srvURL) {
		if c.Name == name {
			tossed = c
		}
	}
	require.NotNil(t, tossed, "the sign-in's flow cookie")
	f, ok := b.login.readFlow(tossed)
	require.True(t, ok)
	f.ReturnTo = "https://evil.example/"
	raw, err := json.Marshal(f)
	require.NoError(t, err)
	b.client.Jar.SetCookies(srvURL, []*http.Cookie{{Name: name, Value: base64.RawURLEncoding.EncodeToString(raw), Path: "/"}})
	resp := b.get(t, b.atProvider(t, authURL).String())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, b.body(t, resp))
	assert.Equal(t, "/", resp.Header.Get("Location"), "a sign-in never leaves the site")
	assert.True(t, b.signedIn(t))
}

func TestLocalPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/audit?x=1": "/audit?x=1", "": "/", "https://evil.example": "/", "//evil.example/x": "/",
		"/\\evil.example": "/", "audit": "/", "javascript:alert(1)": "/",
	} {
		assert.Equal(t, want, LocalPath(in), in)
	}
}

// TestSignInAndOutAuditedWithTheirChange: a sign-in and a sign-out are
// state changes (a session that lets someone in, or no longer does; the
// directory entry that vouches for the person), and each is audited in
// the same transaction: when the audit row cannot be written, the sign-in
// or sign-out does not happen either.
func TestSignInAndOutAuditedWithTheirChange(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	ctx := context.Background()
	auditWritable := func(ok bool) {
		t.Helper()
		stmt := "REVOKE INSERT ON audit_log FROM quarantine_runtime" // a lost privilege, say, or a failing disk
		if ok {
			stmt = "GRANT INSERT ON audit_log TO quarantine_runtime"
		}
		_, err := b.db.OwnerPool.Exec(ctx, stmt)
		require.NoError(t, err)
	}
	count := func(sql string) int {
		t.Helper()
		var n int
		require.NoError(t, b.db.Pool.QueryRow(ctx, sql).Scan(&n))
		return n
	}

	t.Run("SignIn", func(t *testing.T) {
		auditWritable(false)
		resp := b.get(t, b.atProvider(t, b.authorize(t)).String())
		assert.NotEqual(t, http.StatusSeeOther, resp.StatusCode, "the sign-in fails")
		assert.False(t, b.signedIn(t), "nobody is signed in without an auth.login row")
		assert.Zero(t, count("SELECT count(*) FROM user_sessions"), "no session is recorded")
		assert.Zero(t, count("SELECT count(*) FROM user_directory"), "the directory is not changed")
	})

	t.Run("SignOut", func(t *testing.T) {
		auditWritable(true)
		require.Equal(t, http.StatusSeeOther, b.get(t, b.atProvider(t, b.authorize(t)).String()).StatusCode)
		require.True(t, b.signedIn(t))
		require.Equal(t, 1, b.auditRows(t, "ok"))

		auditWritable(false)
		req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/auth/logout", nil)
		require.NoError(t, err)
		resp, err := b.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.NotEqual(t, http.StatusSeeOther, resp.StatusCode, "the sign-out fails")
		assert.Zero(t, count("SELECT count(*) FROM user_sessions WHERE ended_at IS NOT NULL"), "no session ended without an auth.logout row")

		auditWritable(true)
		req, err = http.NewRequest(http.MethodPost, b.srv.URL+"/auth/logout", nil)
		require.NoError(t, err)
		resp, err = b.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
		assert.False(t, b.signedIn(t))
		assert.Equal(t, 1, count("SELECT count(*) FROM user_sessions WHERE ended_at IS NOT NULL"))
		assert.Equal(t, 1, count("SELECT count(*) FROM audit_log WHERE action = 'auth.logout'"))
	})
}

// TestSecondSignInEndsTheFirst: signing in again in a browser that is
// still signed in replaces its sign-in. The earlier session ends in the
// new sign-in's transaction (its audit row says so), so it is no longer
// listed as live nor usable by whoever kept its cookie.
func TestSecondSignInEndsTheFirst(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	ctx := context.Background()
	b.signIn(t)
	stolen := b.client.Jar.Cookies(mustURL(t, b.srv.URL))
	require.NotEmpty(t, stolen)
	b.signIn(t)

	var live, ended int
	var reason string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE ended_at IS NULL), count(*) FILTER (WHERE ended_at IS NOT NULL),
		coalesce(max(ended_reason), '') FROM user_sessions`).Scan(&live, &ended, &reason))
	assert.Equal(t, 1, live, "one live session: the new sign-in")
	assert.Equal(t, 1, ended, "the earlier one ended")
	assert.Equal(t, "signed in again in the same browser", reason)
	var said string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT reason FROM audit_log WHERE action = 'auth.login' ORDER BY seq DESC LIMIT 1`).Scan(&said))
	assert.Equal(t, "ended the earlier sign-in of this browser", said)

	// The first sign-in's cookie, kept by someone, signs nobody in.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	jar.SetCookies(mustURL(t, b.srv.URL), stolen)
	old := &http.Client{Jar: jar}
	resp, err := old.Get(b.srv.URL + "/me")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.True(t, b.signedIn(t), "the browser stays signed in with the new sign-in")
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}
