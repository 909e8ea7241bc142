package authz

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestEmailBindingRefusesAddressWithoutKey: the form refuses an email
// binding whose address is not ASCII (no key: its letters could read as
// another mailbox), saying what to bind instead; an ASCII address in any
// case is bound by its key and matches the verified claim in any case.
func TestEmailBindingRefusesAddressWithoutKey(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	a := newAccess(t, db, GroupMap{})
	ctx := context.Background()
	admin := User{Actor: quarantine.Actor{Issuer: "i", Subject: "admin", Email: "admin@example.com", EmailVerified: true}}
	bindings := NewBindings(db.Pool)

	in := BindingInput{Email: "ops@k\u0130w\u0130.example", Role: RoleApprover, Tenant: "acme"}
	errs := in.Validate()
	assert.Contains(t, errs["email"], "ASCII only", "the form says why")
	assert.Contains(t, errs["email"], "issuer|subject", "the form says what to bind instead")
	_, err := bindings.Add(ctx, in, admin, audit.Event{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err))

	b, err := bindings.Add(ctx, BindingInput{Email: "Ops@Kiwi.Example", Role: RoleApprover, Tenant: "acme"}, admin, audit.Event{})
	require.NoError(t, err)
	assert.Equal(t, "email:ops@kiwi.example", b.Subject)
	require.NoError(t, a.Reload())
	owner := User{Actor: quarantine.Actor{Issuer: "i", Subject: "ops", Email: "OPS@kiwi.example", EmailVerified: true}}
	assert.True(t, a.Can(owner, "acme", ReplayObject("manual"), ActApprove), "ASCII case is one mailbox")
	unverified := owner
	unverified.EmailVerified = false
	assert.False(t, a.Can(unverified, "acme", ReplayObject("manual"), ActApprove), "an unverified claim matches no binding")
}

// TestUnmatchedBindingGivesNothing: a binding migration 0050 flagged (an
// address keyed by Unicode lower-casing) is loaded for nobody and held by
// nobody on the admin page's list, whatever its subject reads.
func TestUnmatchedBindingGivesNothing(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `INSERT INTO role_bindings (subject, role, tenant, created_by, unmatched_since)
        VALUES ('email:ops@kiwi.example', 'approver', 'acme', '', now())`)
	require.NoError(t, err)
	a := newAccess(t, db, GroupMap{})
	owner := User{Actor: quarantine.Actor{Issuer: "i", Subject: "ops", Email: "ops@kiwi.example", EmailVerified: true}}
	assert.False(t, a.Can(owner, "acme", ReplayObject("manual"), ActApprove), "a flagged binding gives a role")

	all, err := NewBindings(db.Pool).List(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.NotNil(t, all[0].UnmatchedSince)
	holders, err := a.Holders(ctx, db.Pool, all, 0)
	require.NoError(t, err)
	assert.Empty(t, holders, "a flagged binding is listed as giving a role")
}

// TestPersonOfNamesByEmailKey: the admin page names a group's holder as an
// email binding names them (the key), and one whose address has no key by
// their identity, never by a lower-cased address that could be another's.
func TestPersonOfNamesByEmailKey(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "ops@kiwi.example", personOf(User{Actor: quarantine.Actor{Issuer: "i", Subject: "s", Email: "Ops@KIWI.example", EmailVerified: true}}))
	assert.Equal(t, "i|s", personOf(User{Actor: quarantine.Actor{Issuer: "i", Subject: "s", Email: "ops@k\u0130w\u0130.example", EmailVerified: true}}))
	assert.Equal(t, "i|s", personOf(User{Actor: quarantine.Actor{Issuer: "i", Subject: "s", Email: "ops@kiwi.example"}}))
}

// TestGrantsEqualByEmailKey: a refresh is an identity change when the email
// moves to or from a key (the Kelvin sign's Kate@ is no binding's address,
// though strings.EqualFold calls it kate@), and is none for ASCII case.
func TestGrantsEqualByEmailKey(t *testing.T) {
	t.Parallel()
	g := func(email string) grants { return grants{Email: email, EmailVerified: true} }
	assert.True(t, g("Kate@example.com").equal(g("kate@example.com")))
	assert.False(t, g("\u212Aate@example.com").equal(g("kate@example.com")))
	assert.True(t, g("zoë@example.com").equal(g("zoë@example.com")))
	assert.False(t, g("zoë@example.com").equal(g("ZOË@example.com")))
}
