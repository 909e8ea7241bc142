package authz

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testidp"
)

// TestRev36NewSignInRecordsTheEndUnderTheEarlierPerson: Ada is signed in
// and someone signs in in her browser. Her sign-in ended in the new
// one's transaction, but the only row that said so was the newcomer's
// auth.login, which did not name her: her own history showed her signed
// in still. Her sign-in's end is her auth.session_end row, in the same
// transaction, and the newcomer's auth.login row names whose sign-in it
// ended when it was another identity's.
func TestRev36NewSignInRecordsTheEndUnderTheEarlierPerson(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ends := func(t *testing.T, b *loginBundle) []audit.Entry {
		t.Helper()
		l, err := audit.List(ctx, b.db.Pool, audit.Filter{Action: audit.ActionSessionEnd})
		require.NoError(t, err)
		return l.Entries
	}
	lastLogin := func(t *testing.T, b *loginBundle) (subject, reason string) {
		t.Helper()
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT actor_subject, reason FROM audit_log
            WHERE action = 'auth.login' ORDER BY seq DESC LIMIT 1`).Scan(&subject, &reason))
		return subject, reason
	}

	t.Run("OtherIdentity", func(t *testing.T) {
		t.Parallel()
		b := setupLogin(t)
		b.signIn(t)
		b.user = &testidp.Person{ID: "u-2", Email: "bob@example.com", EmailVerified: true, Groups: []string{"acme:viewer"}}
		bobSub := testidp.Subject("u-2")
		b.signIn(t)
		u, ok := b.me(t)
		require.True(t, ok)
		require.Equal(t, bobSub, u.Subject, "the browser is Bob's now")

		var reason string
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT ended_reason FROM user_sessions WHERE subject = $1`, adaSub).Scan(&reason))
		e := ends(t, b)
		require.Len(t, e, 1, "Ada's sign-in ended with its row")
		assert.Equal(t, adaSub, e[0].Actor.Subject, "under Ada")
		assert.Equal(t, reason, e[0].Reason, "saying why, as her session does")
		assert.Contains(t, e[0].Reason, "bob@example.com", "naming who signed in in her browser")
		sub, said := lastLogin(t, b)
		assert.Equal(t, bobSub, sub)
		assert.Contains(t, said, "another identity", "Bob's sign-in says it ended someone else's")
		assert.Contains(t, said, "ada@example.com", "and whose")
	})

	t.Run("SameIdentity", func(t *testing.T) {
		t.Parallel()
		b := setupLogin(t)
		b.signIn(t)
		b.signIn(t)
		e := ends(t, b)
		require.Len(t, e, 1, "the earlier sign-in ended with its row")
		assert.Equal(t, adaSub, e[0].Actor.Subject)
		assert.Equal(t, "signed in again in the same browser", e[0].Reason)
		_, said := lastLogin(t, b)
		assert.Equal(t, "ended the earlier sign-in of this browser", said)
	})
}
