package authz

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSignedInAgainEndsOnlyTheOlderSession: the details of
// TestRevGov20SecondSignInRevokesThePerson. Dex dropped the laptop's
// refresh token when the phone signed in; the laptop's refresh is refused
// and its session ends, audited with the reason that says why, the
// person's entry is not revoked, and the laptop's request asks Dex at once
// through the token Dex honours, the phone's, which Dex answers.
//
// Adjusted (fix20e): it asserted that the phone was left due (refreshed_at
// 'epoch') for its own next request to ask. The laptop's request now asks
// through the phone's token itself (Login.refreshNewest,
// TestRevGov20RemovedPersonKeepsAuthorityThroughIdleNewerSession), so the
// phone is found refreshed instead, and its next request is answered
// without asking again.
func TestSignedInAgainEndsOnlyTheOlderSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	laptop, phone := b.signInTwice(t)

	b.ageSession(t, false)
	b.client = laptop
	_, ok := b.me(t)
	require.False(t, ok, "the laptop's refresh token was dropped by Dex: its session ends")

	var reason string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT ended_reason FROM user_sessions WHERE ended_at IS NOT NULL`).Scan(&reason))
	assert.Equal(t, signedInAgain, reason)
	var audited int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'auth.session_end' AND reason = $1`, signedInAgain).Scan(&audited))
	assert.Equal(t, 1, audited, "the end is audited with its reason")
	e, err := NewDirectory(b.db.Pool).Lookup(ctx, b.idp.Issuer, adaSub)
	require.NoError(t, err)
	assert.True(t, e.RevokedAt.IsZero(), "not revoked: %q", e.RevokedReason)
	assert.Equal(t, []string{"acme:oncall"}, e.Groups)

	var refreshedAt time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT refreshed_at FROM user_sessions WHERE ended_at IS NULL`).Scan(&refreshedAt))
	assert.WithinDuration(t, time.Now(), refreshedAt, time.Minute, "the laptop's request asked the provider through the phone's token")
	b.client = phone
	u, ok := b.me(t)
	require.True(t, ok, "the phone's token is the one Dex honours")
	assert.Equal(t, []string{"acme:oncall"}, u.Groups)
}

// TestSupersededRefusalLeavesAClaimedNewestToItsHolder: when the laptop's
// refusal is superseded by the phone's sign-in but a request of the phone
// holds the claim on its refresh, the laptop's request does not spend the
// phone's token too: the phone stays due, its claim untouched.
func TestSupersededRefusalLeavesAClaimedNewestToItsHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	laptop, _ := b.signInTwice(t)
	_, err := b.db.Pool.Exec(ctx, `UPDATE user_sessions SET refreshing_until = now() + interval '30 seconds'
        WHERE created_at = (SELECT max(created_at) FROM user_sessions)`)
	require.NoError(t, err)

	b.ageSession(t, false)
	b.client = laptop
	_, ok := b.me(t)
	require.False(t, ok, "the laptop's refresh token was dropped by Dex: its session ends")

	var due, claimed bool
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT refreshed_at = 'epoch', COALESCE(refreshing_until > now(), false) FROM user_sessions WHERE ended_at IS NULL`).
		Scan(&due, &claimed))
	assert.True(t, due && claimed, "the phone's refresh is its claim holder's: due %v, claimed %v", due, claimed)
	e, err := NewDirectory(b.db.Pool).Lookup(ctx, b.idp.Issuer, adaSub)
	require.NoError(t, err)
	assert.True(t, e.RevokedAt.IsZero(), "not revoked: %q", e.RevokedReason)
}

// TestNarrowedGrantsMakeOtherSessionsDue: the refresh that reads fewer
// groups makes the person's other live sessions due in its transaction;
// the session refreshed is not.
func TestNarrowedGrantsMakeOtherSessionsDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	_, phone := b.signInTwice(t)

	b.user.Groups = []string{"acme:viewer"}
	b.idp.Add(*b.user)
	b.ageSession(t, true)
	b.client = phone
	_, ok := b.me(t)
	require.True(t, ok)
	var due []bool
	rows, err := b.db.Pool.Query(ctx, `SELECT refreshed_at = 'epoch' FROM user_sessions ORDER BY created_at`)
	require.NoError(t, err)
	for rows.Next() {
		var d bool
		require.NoError(t, rows.Scan(&d))
		due = append(due, d)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []bool{true, false}, due, "the laptop is due, the phone just refreshed")
}

func TestGrantsNarrowedTo(t *testing.T) {
	t.Parallel()
	ada := grants{Email: "ada@example.com", EmailVerified: true, Groups: []string{"acme:oncall", "acme:viewer"}}
	with := func(f func(*grants)) grants {
		g := ada
		g.Groups = append([]string(nil), ada.Groups...)
		f(&g)
		return g
	}
	for _, tt := range []struct {
		name     string
		was, now grants
		narrowed bool
	}{
		{"Same", ada, ada, false},
		{"GroupLost", ada, with(func(g *grants) { g.Groups = []string{"acme:viewer"} }), true},
		{"GroupGained", ada, with(func(g *grants) { g.Groups = append(g.Groups, "globex:viewer") }), false},
		{"EmailChanged", ada, with(func(g *grants) { g.Email = "ada@other.example" }), true},
		{"EmailCaseOnly", ada, with(func(g *grants) { g.Email = "Ada@Example.com" }), false},
		{"EmailUnverified", ada, with(func(g *grants) { g.EmailVerified = false }), true},
		{"EmailVerifiedNow", with(func(g *grants) { g.EmailVerified = false }), ada, false},
		{"UnverifiedEmailChanged", with(func(g *grants) { g.EmailVerified = false }),
			with(func(g *grants) { g.EmailVerified = false; g.Email = "ada@other.example" }), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.narrowed, tt.was.narrowedTo(tt.now))
		})
	}
}
