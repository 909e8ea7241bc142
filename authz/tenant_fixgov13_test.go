package authz

import "testing"

// TestFixGov13PartialWildcardTenantRefused: a group mapping and a binding
// agree on what may name a tenant: a partial wildcard ("a*") is refused in
// both (at start for AUTHZ_GROUP_ROLES, in the form for a binding), and
// AllTenants itself is taken by both.
func TestFixGov13PartialWildcardTenantRefused(t *testing.T) {
	t.Parallel()
	for _, tenant := range []string{"a*", "*a", "a*b", "**"} {
		if _, err := ParseGroupMap("platform=" + tenant + ":approver"); err == nil {
			t.Errorf("group mapping with tenant %q accepted", tenant)
		}
		if _, ok := parseTenantRole(tenant + ":approver"); ok {
			t.Errorf("group role with tenant %q accepted", tenant)
		}
		in := BindingInput{Email: "ann@example.com", Role: "approver", Tenant: tenant}
		if in.Validate()["tenant"] == "" {
			t.Errorf("binding with tenant %q accepted", tenant)
		}
	}
	m, err := ParseGroupMap("platform=*:approver,acme:oncall")
	if err != nil || len(m.Extra["platform"]) != 2 {
		t.Errorf("group mapping with all tenants and a tenant: %v %v", m, err)
	}
	in := BindingInput{Email: "ann@example.com", Role: "approver", Tenant: AllTenants}
	if errs := in.Validate(); errs != nil {
		t.Errorf("binding for all tenants: %v", errs)
	}
}
