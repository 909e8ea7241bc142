package authz

// Review (rev-govern): a groups claim sent as one string.

import (
	"slices"
	"testing"
)

// TestGroupsClaimStringIsOneGroup: roles come from groups only under a
// prefix only the provider's administrators can create groups under,
// because "at many providers group names are chosen by users" (GroupMap,
// docs/access.md). A provider that sends the groups claim as one string
// (several do when a person is in a single group) has it split on commas
// (userFromClaims), so one group a user named "book club,quarantine:acme:admin"
// (a name that does not start with the prefix) becomes two, and the second
// gives admin in acme.
func TestGroupsClaimStringIsOneGroup(t *testing.T) {
	t.Parallel()
	l := &Login{cfg: OIDCConfig{GroupsClaim: "groups"}}
	u, err := l.userFromClaims("https://idp.example", "mallory", map[string]any{
		"email": "mallory@example.com", "email_verified": true,
		"groups": "book club,quarantine:acme:admin",
	})
	if err != nil {
		t.Fatal(err)
	}
	m := GroupMap{Prefix: "quarantine:"}
	if roles := m.RolesFor(u.Groups); slices.Contains(roles, TenantRole{Tenant: "acme", Role: RoleAdmin}) {
		t.Errorf("one user-named group %q gives %v", "book club,quarantine:acme:admin", roles)
	}
}
