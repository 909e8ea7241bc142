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

// TestRevGov10EmailBindingGrantedToAnotherDomainByToLower: an email
// binding is matched as "email:"+strings.ToLower(email), and Go's ToLower
// maps U+0130 (İ, capital I with dot above) to a plain "i". So an address
// at kİwİ.example, an internationalised domain of its own
// (xn--kiwi-rwcc.example: anyone may register it, and verify any mailbox
// there), is read as ops@kiwi.example and holds every role bound to that
// address: here approver in acme, so a stranger approves acme's replays
// (and the worker's re-check, which asks the same Access, agrees).
// replaypolicy's mailbox says exactly this ("unicode.ToLower would be
// wrong here: it maps İ to i"), but only SamePerson avoids it; the rule
// that grants does not.
func TestRevGov10EmailBindingGrantedToAnotherDomainByToLower(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	a := newAccess(t, db, GroupMap{})
	ctx := context.Background()
	admin := User{Actor: quarantine.Actor{Issuer: "i", Subject: "admin", Email: "admin@example.com", EmailVerified: true}}
	_, err := NewBindings(db.Pool).Add(ctx, BindingInput{Email: "ops@kiwi.example", Role: RoleApprover, Tenant: "acme"}, admin, audit.Event{})
	require.NoError(t, err)
	require.NoError(t, a.Reload())

	owner := User{Actor: quarantine.Actor{Issuer: "i", Subject: "ops", Email: "ops@kiwi.example", EmailVerified: true}}
	require.True(t, a.Can(owner, "acme", ReplayObject("manual"), ActApprove), "the bound address approves")

	stranger := User{Actor: quarantine.Actor{Issuer: "i", Subject: "mallory", Email: "ops@k\u0130w\u0130.example", EmailVerified: true}}
	assert.False(t, a.Can(stranger, "acme", ReplayObject("manual"), ActApprove),
		"a verified address at another domain (kİwİ.example, xn--kiwi-rwcc) holds the role bound to ops@kiwi.example")
}
