package authz

import (
	"context"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev34UnverifiedRefreshEndsTheSessionNotThePerson: an answer to a
// refresh that could not be verified (here an ID token for another
// audience; as well a key set that could not be fetched after a rotation,
// a userinfo endpoint behind a failing proxy, or the time run out, which
// go-oidc gives no type to tell apart) was taken for the provider
// refusing the person: their directory entry revoked, their approvals
// voided and their jobs blocked for good. The session ends; the person is
// not revoked.
func TestRev34UnverifiedRefreshEndsTheSessionNotThePerson(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	b.signIn(t)
	_, ok := b.me(t)
	require.True(t, ok)

	b.login.verifier = b.login.provider.Verifier(&oidc.Config{ClientID: "another-client"}) // every refreshed ID token fails
	b.ageSession(t, true)
	_, ok = b.me(t)
	assert.False(t, ok, "the refresh could not be verified: the session ends")
	dir, err := NewDirectory(b.db.Pool).Lookup(ctx, b.idp.Issuer, adaSub)
	require.NoError(t, err)
	assert.True(t, dir.RevokedAt.IsZero(), "the provider refused nobody, yet the person was revoked: %q", dir.RevokedReason)
}
