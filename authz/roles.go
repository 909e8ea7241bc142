package authz

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Roles a user can hold in a tenant.
const (
	RoleViewer   = "viewer"   // read dead letters
	RoleOncall   = "oncall"   // viewer + request replay + discard
	RoleApprover = "approver" // viewer + approve/reject
	RoleAuditor  = "auditor"  // audit read + export, dead letters read-only
	RoleAdmin    = "admin"    // role bindings and policy view
)

// Roles lists every role, in the order the UI shows them.
var Roles = []string{RoleViewer, RoleOncall, RoleApprover, RoleAuditor, RoleAdmin}

// AllTenants is the tenant of a binding that applies everywhere.
const AllTenants = "*"

// Objects and actions of the model. Replay objects carry the policy class,
// "replay:<class>", so a policy line can allow one class and not another.
const (
	ObjDeadLetter = "deadletter"
	ObjAudit      = "audit"
	ObjBindings   = "bindings"
	ObjPolicy     = "policy"
	ObjSessions   = "sessions" // other people's sign-in sessions (revoke needs it in every tenant)

	ActRead     = "read"
	ActDownload = "download"
	ActDiscard  = "discard"
	ActResolve  = "resolve"
	ActRequest  = "request"
	ActApprove  = "approve"
	ActReject   = "reject"
	ActCancel   = "cancel"
	ActExport   = "export"
	ActManage   = "manage"
	ActRevoke   = "revoke"
	ActTriage   = "triage" // snooze, assign and note error groups
	// ActStop stops anyone's replay in an emergency (approvers, admins);
	// ActReconcile settles a replay whose outcome nobody can know
	// (approvers); ActFix records that a fix is in place (on-call).
	ActStop      = "stop"
	ActReconcile = "reconcile"
	ActFix       = "fix"
)

// ReplayObject is the object for replaying items of a policy class.
func ReplayObject(class string) string { return replaypolicy.Object(replaypolicy.Class(class)) }

// ValidRole reports whether r is one of Roles.
func ValidRole(r string) bool {
	for _, x := range Roles {
		if x == r {
			return true
		}
	}
	return false
}

// TenantRole is one role held in one tenant ("*" for all tenants).
type TenantRole struct {
	Tenant string
	Role   string
}

// GroupMap maps identity-provider groups to roles, only as configured:
//
//   - with a Prefix (AUTHZ_GROUP_PREFIX, e.g. "quarantine:"), a group named
//     "<prefix><tenant>:<role>" ("quarantine:acme:approver",
//     "quarantine:*:auditor") gives that role in that tenant;
//   - Extra (AUTHZ_GROUP_ROLES) maps groups by their exact name
//     ("platform-oncall" → acme:oncall, globex:oncall).
//
// Nothing else gives a role: a group that merely looks like "acme:admin"
// does not, because at many providers group names are chosen by users (a
// GitHub organisation and team is "org:team").
type GroupMap struct {
	Prefix string
	Extra  map[string][]TenantRole
}

// CheckGroupPrefix validates AUTHZ_GROUP_PREFIX: empty (no group gives a
// role by its name) or a token without spaces or commas. It should end with
// a separator (":" or "/") and name something only the provider's
// administrators can create groups under.
func CheckGroupPrefix(p string) error {
	if strings.ContainsAny(p, " \t\n,;=") {
		return fmt.Errorf("must not contain spaces, commas, semicolons or '='")
	}
	return nil
}

// ParseGroupMap reads AUTHZ_GROUP_ROLES: entries separated by ";", each
// "group=tenant:role[,tenant:role...]".
func ParseGroupMap(s string) (GroupMap, error) {
	m := GroupMap{Extra: map[string][]TenantRole{}}
	for _, entry := range strings.Split(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		group, roles, ok := strings.Cut(entry, "=")
		group = strings.TrimSpace(group)
		if !ok || group == "" {
			return m, fmt.Errorf("entry %q: want group=tenant:role[,tenant:role]", entry)
		}
		for _, tr := range strings.Split(roles, ",") {
			r, ok := parseTenantRole(strings.TrimSpace(tr))
			if !ok {
				return m, fmt.Errorf("entry %q: %q is not tenant:role with a role of %s", entry, tr, strings.Join(Roles, ", "))
			}
			m.Extra[group] = append(m.Extra[group], r)
		}
	}
	return m, nil
}

func parseTenantRole(s string) (TenantRole, bool) {
	tenant, role, ok := strings.Cut(s, ":")
	if !ok || !validTenant(tenant) || !ValidRole(role) {
		return TenantRole{}, false
	}
	return TenantRole{Tenant: tenant, Role: role}, true
}

// validTenant reports whether t may be the tenant of a role, in a group
// mapping and in a binding alike: a tenant's name (not empty, no space,
// '.' or '>', which subjects give meaning to, and no '*'), or AllTenants
// itself. A partial wildcard ("a*") names no tenant: refused where it is
// written, at start or in the form, rather than held to mean something.
func validTenant(t string) bool {
	return t != "" && !strings.ContainsAny(t, " .>") && oneOrAll(t)
}

// oneOrAll reports whether t names one tenant or AllTenants, not a
// pattern: it holds no '*', or is AllTenants itself. Bindings match their
// tenant with keyMatch (model.conf), which reads a '*' anywhere as "and
// anything after": "acme*" would grant in acme and in every tenant whose
// name starts with it. The adapter refuses a stored binding that fails it
// (adapter.load), whoever wrote the row.
func oneOrAll(t string) bool {
	return t == AllTenants || !strings.Contains(t, "*")
}

// RolesFor returns the roles the groups give, sorted and without repeats.
// Groups that map to nothing are ignored.
func (m GroupMap) RolesFor(groups []string) []TenantRole {
	seen := map[TenantRole]bool{}
	for _, g := range groups {
		if name, ok := strings.CutPrefix(g, m.Prefix); ok && m.Prefix != "" {
			if r, ok := parseTenantRole(name); ok {
				seen[r] = true
			}
		}
		for _, r := range m.Extra[g] {
			seen[r] = true
		}
	}
	return sortRoles(seen)
}

// Fingerprint is the hex SHA-256 of the mapping (the prefix, then each
// rule of Rules on a line): two processes that give the same groups the
// same roles print the same one, whatever order AUTHZ_GROUP_ROLES lists
// them in. The mapping lives only in each process's settings, so this is
// how one tells, from their start-up logs, that every replica and worker
// was rolled with the same one (docs/access.md, "Group mappings are
// settings").
func (m GroupMap) Fingerprint() string {
	var b strings.Builder
	fmt.Fprintf(&b, "prefix %q\n", m.Prefix)
	for _, r := range m.Rules() {
		fmt.Fprintf(&b, "%q=%s:%s\n", r.Group, r.Tenant, r.Role)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// Rules lists the configured extra mappings, for the admin page.
func (m GroupMap) Rules() []struct{ Group, Tenant, Role string } {
	var out []struct{ Group, Tenant, Role string }
	for g, rs := range m.Extra {
		for _, r := range rs {
			out = append(out, struct{ Group, Tenant, Role string }{g, r.Tenant, r.Role})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Tenant+out[i].Role < out[j].Tenant+out[j].Role
	})
	return out
}

func sortRoles(set map[TenantRole]bool) []TenantRole {
	out := make([]TenantRole, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tenant != out[j].Tenant {
			return out[i].Tenant < out[j].Tenant
		}
		return out[i].Role < out[j].Role
	})
	return out
}
