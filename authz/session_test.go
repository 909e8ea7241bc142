package authz

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testidp"
)

// signIn completes a sign-in through Dex as b.user.
func (b *loginBundle) signIn(t *testing.T) {
	t.Helper()
	cb := b.atProvider(t, b.authorize(t))
	require.Equal(t, http.StatusSeeOther, b.get(t, cb.String()).StatusCode)
	require.True(t, b.signedIn(t))
}

func (b *loginBundle) me(t *testing.T) (User, bool) {
	t.Helper()
	resp := b.get(t, b.srv.URL+"/me")
	if resp.StatusCode != http.StatusOK {
		return User{}, false
	}
	var u User
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&u))
	return u, true
}

// ageSessions makes every session's groups older than the refresh interval.
func (b *loginBundle) ageSessions(t *testing.T) {
	t.Helper()
	_, err := b.db.Pool.Exec(context.Background(), `UPDATE user_sessions SET refreshed_at = now() - interval '2 hours'`)
	require.NoError(t, err)
}

func TestSessionGroupsRefreshed(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	b.signIn(t)
	var refreshToken *string
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT refresh_token FROM user_sessions`).Scan(&refreshToken))
	require.NotNil(t, refreshToken, "the provider gave a refresh token")

	// The provider now says other groups; within the interval the session
	// keeps what it read at sign-in.
	b.user.Groups = []string{"globex:viewer"}
	b.idp.Add(*b.user)
	u, ok := b.me(t)
	require.True(t, ok)
	assert.Equal(t, []string{"acme:oncall"}, u.Groups)

	// Past the interval, the next request reads them again.
	b.ageSessions(t)
	u, ok = b.me(t)
	require.True(t, ok, "a refresh the provider accepts keeps the session")
	assert.Equal(t, []string{"globex:viewer"}, u.Groups)
	dir, err := NewDirectory(b.db.Pool).Lookup(context.Background(), u.Issuer, u.Subject)
	require.NoError(t, err)
	assert.Equal(t, []string{"globex:viewer"}, dir.Groups, "workers see the groups as refreshed")
	var refreshedAt time.Time
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT refreshed_at FROM user_sessions`).Scan(&refreshedAt))
	assert.WithinDuration(t, time.Now(), refreshedAt, time.Minute, "read again from the provider")
}

func TestSessionEndsWhenRefreshFails(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	b.signIn(t)
	// The provider no longer accepts the refresh token (the person was
	// removed, or their grant revoked).
	_, err := b.db.Pool.Exec(context.Background(), `UPDATE user_sessions SET refresh_token = 'revoked-at-the-provider'`)
	require.NoError(t, err)
	u, ok := b.me(t)
	require.True(t, ok, "within the interval nothing is asked")
	require.Equal(t, adaSub, u.Subject)

	b.ageSessions(t)
	_, ok = b.me(t)
	assert.False(t, ok, "the session ends when the provider refuses the refresh")
	_, ok = b.me(t)
	assert.False(t, ok, "and stays ended")
	var reason string
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT ended_reason FROM user_sessions`).Scan(&reason))
	assert.Equal(t, "the identity provider did not refresh the sign-in", reason)
	var audited int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM audit_log WHERE action = 'auth.session_end' AND actor_subject = $1`, adaSub).Scan(&audited))
	assert.Equal(t, 1, audited)
	dir, err := NewDirectory(b.db.Pool).Lookup(context.Background(), u.Issuer, u.Subject)
	require.NoError(t, err)
	assert.False(t, dir.RevokedAt.IsZero(), "the provider refused the person: their directory entry is revoked")
	assert.Empty(t, dir.Groups)

	// No refresh token at all: the session ends at the interval too, but
	// nothing was refused: the directory keeps the groups of the sign-in
	// (they count until they are a session lifetime old).
	b2 := setupLogin(t)
	b2.signIn(t)
	_, err = b2.db.Pool.Exec(context.Background(), `UPDATE user_sessions SET refresh_token = NULL`)
	require.NoError(t, err)
	b2.ageSessions(t)
	_, ok = b2.me(t)
	assert.False(t, ok)
	dir, err = NewDirectory(b2.db.Pool).Lookup(context.Background(), b2.idp.Issuer, adaSub)
	require.NoError(t, err)
	assert.True(t, dir.RevokedAt.IsZero())
	assert.Equal(t, []string{"acme:oncall"}, dir.Groups)
}

// TestSessionRefreshKeepsIdentity: a provider that answers a refresh for
// another subject ends the session, even when that subject has the same
// verified email: a session is one identity, never whoever shares its
// address.
func TestSessionRefreshKeepsIdentity(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	b.signIn(t)
	// Ada's account was removed and made again under her sign-in name:
	// same email, verified, another identity.
	b.idp.Add(testidp.Person{Login: "u-1", ID: "u-2", Email: b.user.Email, EmailVerified: true, Groups: []string{"acme:admin"}})
	b.ageSessions(t)
	_, ok := b.me(t)
	assert.False(t, ok, "the session ends rather than become someone else")
	var reason string
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT ended_reason FROM user_sessions`).Scan(&reason))
	assert.Equal(t, "the identity provider refreshed the sign-in as someone else", reason)
	_, err := NewDirectory(b.db.Pool).Lookup(context.Background(), b.idp.Issuer, testidp.Subject("u-2"))
	assert.Equal(t, quarantine.ENOTFOUND, quarantine.ErrorCode(err), "the other identity was not remembered from this session")
}

func TestRevokeSessionsEndsThemAtOnce(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	b.signIn(t)
	admin := User{Actor: quarantine.Actor{Issuer: "https://idp.example", Subject: "admin-1", Email: "admin@example.com", EmailVerified: true}}
	people, err := ActivePeople(context.Background(), b.db.Pool)
	require.NoError(t, err)
	require.Len(t, people, 1)
	assert.Equal(t, adaSub, people[0].User.Subject)
	assert.Equal(t, 1, people[0].Sessions)

	n, err := RevokeSessions(context.Background(), b.db.Pool, people[0].User.Issuer, adaSub, admin, audit.Event{RequestMeta: quarantine.RequestMeta{RequestID: "req-1"}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	assert.False(t, b.signedIn(t), "the next request is signed out")
	people, err = ActivePeople(context.Background(), b.db.Pool)
	require.NoError(t, err)
	assert.Empty(t, people)
	e, err := audit.List(context.Background(), b.db.Pool, audit.Filter{Action: "auth.sessions_revoke"})
	require.NoError(t, err)
	require.Len(t, e.Entries, 1)
	assert.Equal(t, "admin-1", e.Entries[0].Actor.Subject)
	assert.JSONEq(t, `{"sessions_ended":1}`, string(e.Entries[0].After))

	_, err = RevokeSessions(context.Background(), b.db.Pool, "", adaSub, admin, audit.Event{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err))
}

// TestSessionCookieSettings: over https the session cookie is Secure,
// HttpOnly, SameSite=Lax and __Host- prefixed (so no subdomain can plant
// one); over http it has the plain name and is not Secure.
func TestSessionCookieSettings(t *testing.T) {
	secure, stop := NewSessions(nil, SessionConfig{Secure: true})
	stop()
	assert.Equal(t, SecureSessionCookie, secure.Cookie.Name)
	assert.True(t, secure.Cookie.Secure)
	assert.True(t, secure.Cookie.HttpOnly)
	assert.Equal(t, http.SameSiteLaxMode, secure.Cookie.SameSite)
	assert.Equal(t, "/", secure.Cookie.Path)
	plain, stop := NewSessions(nil, SessionConfig{})
	stop()
	assert.Equal(t, SessionCookie, plain.Cookie.Name)
	assert.False(t, plain.Cookie.Secure)
}

// TestRevokeDuringRefreshStaysRevoked: an admin ends a person's sessions
// while one of their requests is refreshing its groups at the provider.
// The refresh must not bring them back: the request that was refreshing
// is signed out, and the directory entry stays revoked (a replay worker
// finds no right of theirs), until they sign in again.
func TestRevokeDuringRefreshStaysRevoked(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	b.signIn(t)
	ctx := context.Background()
	issuer := b.idp.Issuer
	admin := User{Actor: quarantine.Actor{Issuer: issuer, Subject: "admin-1", Email: "admin@example.com", EmailVerified: true}}
	revoke := func() {
		_, err := RevokeSessions(ctx, b.db.Pool, issuer, adaSub, admin, audit.Event{})
		assert.NoError(t, err)
	}
	b.atToken.Store(&revoke) // the admin acts while the provider is asked
	b.ageSessions(t)

	_, ok := b.me(t)
	assert.False(t, ok, "the request whose refresh the revocation overtook is signed out")
	_, ok = b.me(t)
	assert.False(t, ok, "and so is the next")
	dir, err := NewDirectory(b.db.Pool).Lookup(ctx, issuer, adaSub)
	require.NoError(t, err)
	assert.False(t, dir.RevokedAt.IsZero(), "the refresh did not lift the revocation")
	assert.Empty(t, dir.Groups, "nor bring the groups back")
	var ended int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM user_sessions WHERE ended_at IS NOT NULL`).Scan(&ended))
	assert.Equal(t, 1, ended)
}

// TestIdentityChangeAtRefreshAudited: what the provider says at a refresh
// can grant roles or take them away (groups map to roles, bindings may name
// a verified email). A refresh that changes any of it writes one audit row
// with the grants before and after, in the refresh's transaction; a
// refresh that changes none of it writes none.
func TestIdentityChangeAtRefreshAudited(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	b.signIn(t)
	ctx := context.Background()
	changes := func() []map[string]any {
		t.Helper()
		rows, err := b.db.Pool.Query(ctx, `SELECT jsonb_build_object('before', before, 'after', after, 'subject', actor_subject, 'reason', reason)
			FROM audit_log WHERE action = 'auth.identity_change' ORDER BY seq`)
		require.NoError(t, err)
		var out []map[string]any
		for rows.Next() {
			var m map[string]any
			require.NoError(t, rows.Scan(&m))
			out = append(out, m)
		}
		require.NoError(t, rows.Err())
		return out
	}

	b.user.Groups = []string{"acme:oncall", "acme:oncall"} // the same grants, said twice
	b.idp.Add(*b.user)
	b.ageSessions(t)
	u, ok := b.me(t)
	require.True(t, ok)
	require.Equal(t, []string{"acme:oncall", "acme:oncall"}, u.Groups, "refreshed")
	assert.Empty(t, changes(), "nothing that grants roles changed: nothing audited")

	b.user.Groups = []string{"globex:admin", "acme:oncall"}
	b.idp.Add(*b.user)
	b.ageSessions(t)
	_, ok = b.me(t)
	require.True(t, ok)
	got := changes()
	require.Len(t, got, 1, "a group added at the provider is audited")
	assert.Equal(t, adaSub, got[0]["subject"])
	assert.Equal(t, []any{"acme:oncall"}, got[0]["before"].(map[string]any)["groups"])
	assert.Equal(t, []any{"acme:oncall", "globex:admin"}, got[0]["after"].(map[string]any)["groups"])

	b.user.EmailVerified = false
	b.idp.Add(*b.user)
	b.ageSessions(t)
	_, ok = b.me(t)
	require.True(t, ok)
	got = changes()
	require.Len(t, got, 2, "an email no longer verified is audited")
	assert.Equal(t, true, got[1]["before"].(map[string]any)["email_verified"])
	assert.Equal(t, false, got[1]["after"].(map[string]any)["email_verified"])
}
