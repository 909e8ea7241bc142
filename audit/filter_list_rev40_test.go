package audit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRev40SignedFilterTellsOneTenantFromSeveral: a tenant may be named
// "acme,globex" (tenantToken and the bindings allow a comma). An export
// filtered to it signed the filter tenants="acme,globex", exactly what an
// export filtered to tenants acme and globex signs: one tenant's export
// verified as showing that acme and globex had no activity. The names of
// a list are now quoted when any holds a comma, a quote or a backslash.
func TestRev40SignedFilterTellsOneTenantFromSeveral(t *testing.T) {
	t.Parallel()
	one := filterText(Filter{Tenants: []string{"acme,globex"}})
	two := filterText(Filter{Tenants: []string{"acme", "globex"}})
	assert.NotEqual(t, one, two)
	assert.Equal(t, `tenants="acme,globex"`, two, "a plain list reads as before")
	assert.Equal(t, `tenants="\"acme,globex\""`, one)
	quotes := filterText(Filter{Tenants: []string{`"acme`, `globex"`}})
	assert.NotEqual(t, one, quotes, "names holding quotes are quoted too")
	assert.NotEqual(t, filterText(Filter{Tenants: []string{"a", "b,c"}}), filterText(Filter{Tenants: []string{"a,b", "c"}}))
}
