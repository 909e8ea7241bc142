package authz

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRememberedDecisionsEndWithThePolicy checks that the answers Access
// remembers (a page asks the same questions many times) never outlive the
// policy that gave them: asked again and again, in parallel, a binding
// added or removed on another replica counts from the request whose Fresh
// sees it, and a reload forgets the rest.
func TestRememberedDecisionsEndWithThePolicy(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	a := newAccess(t, db, GroupMap{})
	admin := User{Actor: quarantine.Actor{Issuer: "i", Subject: "admin", Email: "admin@example.com"}}
	bob := User{Actor: quarantine.Actor{Issuer: "i", Subject: "bob", Email: "bob@example.com", EmailVerified: true}}
	bindings := NewBindings(db.Pool)

	askedByMany := func(want bool, why string) {
		t.Helper()
		var wg sync.WaitGroup
		wrong := make([]int, 16) // answers other than want, per asker
		for i := range wrong {
			wg.Go(func() {
				for range 50 {
					if a.Can(bob, "acme", ObjDeadLetter, ActRead) != want {
						wrong[i]++
					}
				}
			})
		}
		wg.Wait()
		for i, n := range wrong {
			assert.Zero(t, n, "%s: asker %d was answered otherwise %d times of 50", why, i, n)
		}
		assert.False(t, a.Can(bob, "globex", ObjDeadLetter, ActRead), "%s: never in globex", why)
	}

	askedByMany(false, "no binding yet")
	for round := range 3 {
		added, err := bindings.Add(ctx, BindingInput{Email: "bob@example.com", Role: RoleOncall, Tenant: "acme"}, admin, audit.Event{})
		require.NoError(t, err)
		require.NoError(t, a.Fresh(ctx))
		askedByMany(true, "bound")
		require.NoError(t, bindings.Delete(ctx, added.ID, admin, func(Binding) bool { return true }, audit.Event{}))
		assert.True(t, a.Can(bob, "acme", ObjDeadLetter, ActRead), "round %d: this replica has not read the change yet", round)
		require.NoError(t, a.Fresh(ctx))
		askedByMany(false, "unbound")
	}

	// A reload forgets what was decided: a role's permission changed by
	// the policy's owner counts once read.
	_, err := bindings.Add(ctx, BindingInput{Email: "bob@example.com", Role: RoleAuditor, Tenant: "acme"}, admin, audit.Event{})
	require.NoError(t, err)
	require.NoError(t, a.Fresh(ctx))
	for range 3 {
		assert.False(t, a.Can(bob, "acme", ObjDeadLetter, ActDiscard), "an auditor does not discard")
	}
	_, err = db.OwnerPool.Exec(ctx, `INSERT INTO casbin_rule (ptype, v0, v1, v2, v3) VALUES ('p', 'auditor', '*', 'deadletter', 'discard')`)
	require.NoError(t, err)
	assert.False(t, a.Can(bob, "acme", ObjDeadLetter, ActDiscard), "not read yet")
	require.NoError(t, a.Reload())
	assert.True(t, a.Can(bob, "acme", ObjDeadLetter, ActDiscard), "the rule the reload read counts")
}
