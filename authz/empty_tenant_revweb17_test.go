package authz

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRevWeb17EmptyTenantIsNoTenant: no dead letter, request or group has
// the tenant "" (ingest files one without a tenant under "unknown"), so a
// right in "" is a right nowhere. Casbin's keyMatch matched "" against a
// "*" binding, so a form naming no tenant (groupRef reads it from the
// form) passed the check for anyone holding a role in every tenant, and
// only the lack of a group in "" stopped it.
func TestRevWeb17EmptyTenantIsNoTenant(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	groups, err := ParseGroupMap("sec=*:oncall")
	require.NoError(t, err)
	groups.Prefix = "quarantine:"
	a := newAccess(t, db, groups)

	everywhere := User{Actor: quarantine.Actor{Issuer: "i", Subject: "1"}, Groups: []string{"quarantine:*:oncall"}}
	mapped := User{Actor: quarantine.Actor{Issuer: "i", Subject: "2"}, Groups: []string{"sec"}}
	for _, u := range []User{everywhere, mapped} {
		require.True(t, a.Can(u, "acme", ObjDeadLetter, ActTriage), "%v: the role holds in a named tenant", u.Groups)
		assert.False(t, a.Can(u, "", ObjDeadLetter, ActTriage), "%v: a right in tenant \"\"", u.Groups)
	}
}
