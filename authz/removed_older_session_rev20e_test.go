package authz

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// TestRevGov20RemovedPersonKeepsAuthorityThroughIdleNewerSession: the
// person is removed at the provider. She has two sessions, the laptop
// (older, in use) and the phone (newer, left idle). The laptop's groups
// come due and Dex refuses its refresh. Because a newer live sign-in holds
// a refresh token, endAtRefresh takes the refusal for "signed in again
// elsewhere": the laptop ends, her directory entry is NOT revoked, and the
// phone is merely made due. Nobody uses the phone, so nobody asks the
// provider again: the replay worker's re-check (Authority) goes on finding
// her on-call of acme from the entry for up to MaxAge (12 h), and what she
// requested or approved keeps publishing, although the provider has
// already refused her. Before fix20c the same refusal revoked her at once.
func TestRevGov20RemovedPersonKeepsAuthorityThroughIdleNewerSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	access := newAccess(t, b.db, GroupMap{Extra: map[string][]TenantRole{"acme:oncall": {{Tenant: "acme", Role: RoleOncall}}}})
	dir := NewDirectory(b.db.Pool)
	worker := Authority{Access: access, Directory: dir}
	laptop, _ := b.signInTwice(t)
	who := quarantine.Actor{Issuer: b.idp.Issuer, Subject: adaSub}
	ok, err := worker.StillAllowed(ctx, who, "acme", ReplayObject("rebuildable"), ActRequest)
	require.NoError(t, err)
	require.True(t, ok, "an on-call of acme by her group, as the worker sees her")

	// Removed at the provider; the laptop (in use) comes due first, the
	// phone lies idle in a drawer.
	b.idp.Remove(b.user.ID)
	b.ageSession(t, false)
	b.client = laptop
	_, laptopOK := b.me(t)
	require.False(t, laptopOK, "the provider refuses the laptop's refresh: its session ends")

	e, err := dir.Lookup(ctx, b.idp.Issuer, adaSub)
	require.NoError(t, err)
	ok, err = worker.StillAllowed(ctx, who, "acme", ReplayObject("rebuildable"), ActRequest)
	require.NoError(t, err)
	assert.False(t, ok,
		"the provider refused her (she was removed), yet the console took the refusal for a newer sign-in elsewhere "+
			"(entry revoked: %v, groups %v), and the worker still finds her right to request replays of acme",
		!e.RevokedAt.IsZero(), e.Groups)
}
