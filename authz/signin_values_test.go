package authz

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSignInStartsWithAnEmptySession: a sign-in in a browser whose
// session holds values (a time zone, a message not yet shown: perhaps the
// previous person's) starts the new sign-in without them.
func TestSignInStartsWithAnEmptySession(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	ctx := context.Background()
	b.signIn(t)
	sctx, err := b.login.sessions.Load(ctx, b.browserToken(t))
	require.NoError(t, err)
	b.login.sessions.Put(sctx, "flash", "for the previous person")
	b.login.sessions.Put(sctx, "time_zone", "local")
	_, _, err = b.login.sessions.Commit(sctx)
	require.NoError(t, err)

	b.signIn(t)
	sctx, err = b.login.sessions.Load(ctx, b.browserToken(t))
	require.NoError(t, err)
	assert.Empty(t, b.login.sessions.GetString(sctx, "flash"))
	assert.Empty(t, b.login.sessions.GetString(sctx, "time_zone"))
	assert.NotEmpty(t, b.login.sessions.GetString(sctx, sessionIDKey), "the new sign-in is in the session")
}
