package authz

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestAuthorityRevokedAndStale: what a replay worker's check finds of a
// person. Group roles count while the directory entry is fresh; a stale
// entry keeps only a binding to the identity itself (not its groups, not
// an email binding); a revoked entry keeps nothing until the next sign-in.
func TestAuthorityRevokedAndStale(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	access := newAccess(t, db, GroupMap{Prefix: "quarantine:"})
	dir := NewDirectory(db.Pool)
	auth := Authority{Access: access, Directory: dir, MaxAge: time.Hour}
	admin := User{Actor: quarantine.Actor{Issuer: "i", Subject: "admin"}}
	bindings := NewBindings(db.Pool)
	person := func(sub string) User {
		return User{Actor: quarantine.Actor{Issuer: "i", Subject: sub, Email: sub + "@example.com", EmailVerified: true}, Groups: []string{"quarantine:acme:approver"}}
	}
	byGroup, byEmail, byIdentity := person("g"), person("e"), person("u")
	byEmail.Groups, byIdentity.Groups = nil, nil
	_, err := bindings.Add(ctx, BindingInput{Email: byEmail.Email, Role: RoleApprover, Tenant: "acme"}, admin, audit.Event{})
	require.NoError(t, err)
	_, err = bindings.Add(ctx, BindingInput{Subject: "i|u", Role: RoleApprover, Tenant: "acme"}, admin, audit.Event{})
	require.NoError(t, err)
	require.NoError(t, access.Reload())
	may := func(u User) bool {
		t.Helper()
		ok, err := auth.StillAllowed(ctx, u.Actor, "acme", ReplayObject("manual"), ActApprove)
		require.NoError(t, err)
		return ok
	}
	for _, u := range []User{byGroup, byEmail, byIdentity} {
		require.NoError(t, dir.Remember(ctx, u))
		assert.True(t, may(u), "%s: fresh", u.Subject)
	}
	assert.False(t, may(person("never-seen")), "never signed in")

	_, err = db.Pool.Exec(ctx, `UPDATE user_directory SET seen_at = now() - interval '2 hours'`)
	require.NoError(t, err)
	assert.False(t, may(byGroup), "groups older than a session lifetime give nothing")
	assert.False(t, may(byEmail), "nor does the email the provider said then")
	assert.True(t, may(byIdentity), "a binding to the identity is the admin's current word")

	for _, u := range []User{byGroup, byEmail, byIdentity} {
		require.NoError(t, dir.Remember(ctx, u)) // signed in again: fresh
		require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			return revokeEntry(ctx, tx, u.Issuer, u.Subject, "revoked by the test")
		}))
		assert.False(t, may(u), "%s: a revoked entry holds nothing, bindings included", u.Subject)
		e, err := dir.Lookup(ctx, u.Issuer, u.Subject)
		require.NoError(t, err)
		assert.Empty(t, e.Groups)
		assert.Equal(t, "revoked by the test", e.RevokedReason)
		require.NoError(t, dir.Remember(ctx, u))
		assert.True(t, may(u), "%s: the next sign-in lifts it", u.Subject)
	}
}

// TestAuthoritySeesBindingChanges: a replay worker's check answers from the
// policy as the database holds it, whether or not the worker's listener
// heard of the change yet (here it never does: nothing watches): a binding
// added counts, a binding removed no longer does.
func TestAuthoritySeesBindingChanges(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	auth := Authority{Access: newAccess(t, db, GroupMap{}), Directory: NewDirectory(db.Pool)}
	admin := User{Actor: quarantine.Actor{Issuer: "i", Subject: "admin"}}
	ann := User{Actor: quarantine.Actor{Issuer: "i", Subject: "ann", Email: "ann@example.com", EmailVerified: true}}
	require.NoError(t, auth.Directory.Remember(ctx, ann))
	may := func() bool {
		ok, err := auth.StillAllowed(ctx, ann.Actor, "acme", ReplayObject("manual"), ActApprove)
		require.NoError(t, err)
		return ok
	}
	require.False(t, may())

	bindings := NewBindings(db.Pool)
	b, err := bindings.Add(ctx, BindingInput{Email: ann.Email, Role: RoleApprover, Tenant: "acme"}, admin, audit.Event{})
	require.NoError(t, err)
	assert.True(t, may(), "the binding counts at the next check")
	require.NoError(t, bindings.Delete(ctx, b.ID, admin, func(Binding) bool { return true }, audit.Event{}))
	assert.False(t, may(), "a removed binding no longer counts at the next check")
}
