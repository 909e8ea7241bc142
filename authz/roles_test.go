package authz

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestGroupRolesNeedPrefix: a group gives a role only under the configured
// prefix or by an explicit mapping. Without a prefix, a group that merely
// looks like "<tenant>:<role>" (which a user can create at providers such as
// Dex's GitHub connector: "org:team") gives nothing, "*:admin" included.
func TestGroupRolesNeedPrefix(t *testing.T) {
	t.Parallel()
	mapped, err := ParseGroupMap("platform-oncall=acme:oncall")
	require.NoError(t, err)
	cases := []struct {
		name   string
		m      GroupMap
		groups []string
		want   []TenantRole
	}{
		{"NoPrefixNoRole", GroupMap{}, []string{"*:admin", "acme:oncall"}, nil},
		{"LookalikeWithoutPrefix", GroupMap{Prefix: "quarantine:"}, []string{"*:admin", "acme:oncall", "evil:quarantine:*:admin"}, nil},
		{"Prefixed", GroupMap{Prefix: "quarantine:"}, []string{"quarantine:acme:oncall", "quarantine:*:auditor"},
			[]TenantRole{{"*", RoleAuditor}, {"acme", RoleOncall}}},
		{"PrefixedUnknownRole", GroupMap{Prefix: "quarantine:"}, []string{"quarantine:acme:king", "quarantine:acme"}, nil},
		{"GitHubTeamNamedLikeARole", GroupMap{Prefix: "quarantine/"}, []string{"quarantine:admin", "myorg:admin"}, nil},
		{"ExplicitMappingWithoutPrefix", mapped, []string{"platform-oncall", "acme:admin"}, []TenantRole{{"acme", RoleOncall}}},
		{"ExplicitMappingIsExact", mapped, []string{"Platform-Oncall", "platform-oncall-x"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.m.RolesFor(tc.groups)
			if len(tc.want) == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}

	// The same through the enforcer: no prefix, no admin.
	db := testdb.New(t)
	a := newAccess(t, db, GroupMap{})
	u := User{Actor: quarantine.Actor{Issuer: "i", Subject: "mallory"}, Groups: []string{"*:admin", "acme:admin"}}
	assert.False(t, a.Can(u, "acme", ObjBindings, ActManage))
	assert.Empty(t, a.Roles(u))
	b := newAccess(t, db, GroupMap{Prefix: "quarantine:"})
	u.Groups = []string{"quarantine:*:admin"}
	assert.True(t, b.Can(u, "acme", ObjBindings, ActManage))

	for _, bad := range []string{"has space", "a,b", "a;b", "a=b"} {
		assert.Error(t, CheckGroupPrefix(bad), bad)
	}
	assert.NoError(t, CheckGroupPrefix(""))
	assert.NoError(t, CheckGroupPrefix("quarantine:"))
}
