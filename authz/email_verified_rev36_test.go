package authz

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev36EmailVerifiedSentAsAString: a provider that sends
// email_verified as the string "true" (Amazon Cognito does) has the
// address taken as verified, so it ties the person's identities together
// as a boolean true does; any other string, or none, is unverified.
func TestRev36EmailVerifiedSentAsAString(t *testing.T) {
	t.Parallel()
	l := &Login{cfg: OIDCConfig{GroupsClaim: "groups"}}
	for claim, want := range map[any]bool{true: true, "true": true, false: false, "false": false, "True": false, "yes": false, 1.0: false} {
		u, err := l.userFromClaims("https://idp.example", "s", map[string]any{"email": "ana@example.com", "email_verified": claim})
		require.NoError(t, err)
		assert.Equal(t, want, u.EmailVerified, "email_verified %#v", claim)
	}
	u, err := l.userFromClaims("https://idp.example", "s", map[string]any{"email": "ana@example.com"})
	require.NoError(t, err)
	assert.False(t, u.EmailVerified)
}
