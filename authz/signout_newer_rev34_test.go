package authz

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev34SignedOutOnThePhoneIsNotRevokedOnTheLaptop: Dex keeps one
// refresh token per person and client, so signing in on the phone drops
// the laptop's. A refusal of the laptop's token counted as "signed in
// again elsewhere" only while the phone's session was live and held a
// token: once she signed out on the phone, the laptop's next refresh was
// taken for the provider removing her: her directory entry revoked, her
// groups cleared, her approvals voided and her jobs blocked for good,
// though nobody removed her. Any later sign-in of hers supersedes the
// laptop's: it ends, and she is not revoked.
func TestRev34SignedOutOnThePhoneIsNotRevokedOnTheLaptop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupLogin(t)
	laptop, phone := b.signInTwice(t)

	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/auth/logout", nil)
	require.NoError(t, err)
	resp, err := phone.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "signed out on the phone")

	b.ageSession(t, false) // the laptop's groups come due
	b.client = laptop
	_, ok := b.me(t)
	assert.False(t, ok, "the laptop's refresh is refused (Dex dropped its token): its session ends")
	dir, err := NewDirectory(b.db.Pool).Lookup(ctx, b.idp.Issuer, adaSub)
	require.NoError(t, err)
	assert.True(t, dir.RevokedAt.IsZero(), "nobody removed her at the provider, yet she was revoked: %q", dir.RevokedReason)
}
