package authz

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestScopeWithin: the tenants of a scope that are also in another, "every
// tenant" on either side keeping the other's.
func TestScopeWithin(t *testing.T) {
	all := Scope{All: true}
	ab, bc := Scope{Tenants: []string{"a", "b"}}, Scope{Tenants: []string{"b", "c"}}
	assert.Equal(t, Scope{Tenants: []string{"b"}}, ab.Within(bc))
	assert.Equal(t, ab, ab.Within(all))
	assert.Equal(t, bc, all.Within(bc))
	assert.Equal(t, all, all.Within(all))
	assert.True(t, ab.Within(Scope{}).Empty())
	assert.True(t, all.Within(Scope{}).Empty())
	assert.True(t, Scope{}.Within(all).Empty())
}
