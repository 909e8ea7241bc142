package authz

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testidp"
)

// Review rev-audit. Groups grant roles (GroupMap.RolesFor), and a sign-in
// stores the person's groups in user_directory, which the replay worker
// and the approval checks read (Authority.StillAllowed). The auth.login
// row records neither the groups nor what changed: a person who signs in
// with a new group (acme:approver), approves, and signs in again without
// it leaves a log from which an auditor cannot tell that, or by which
// grant, they held the right. (A refresh audits the same change:
// auth.identity_change, with before and after.)
func TestRevAuditSignInRecordsTheGroupsThatGrantRoles(t *testing.T) {
	t.Parallel()
	b := setupLogin(t)
	ctx := context.Background()
	b.signIn(t)

	b.user = &testidp.Person{ID: "u-1", Email: "ada@example.com", EmailVerified: true, Groups: []string{"acme:approver"}}
	b.signIn(t)
	var groups []string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT groups FROM user_directory WHERE subject = $1`, adaSub).Scan(&groups))
	require.Equal(t, []string{"acme:approver"}, groups, "precondition: the directory took the new group")

	var n int
	require.NoError(t, b.db.Pool.QueryRow(ctx,
		`SELECT count(*) FROM audit_log WHERE actor_subject = $1 AND after::text LIKE '%acme:approver%'`, adaSub).Scan(&n))
	assert.NotZero(t, n, "no audit row says the person signed in holding acme:approver")
}
