package views

// Paths the navigation links to. The web package routes these.
const (
	PathDashboard   = "/"
	PathDeadLetters = "/deadletters"
	PathGroups      = "/groups"
	PathApprovals   = "/approvals"
	PathAudit       = "/audit"
	PathAdmin       = "/admin/bindings"
	PathSessions    = "/admin/sessions"
	PathPolicy      = "/policy"
	PathStop        = "/replay/stop"
	PathLogin       = "/auth/login"
	PathLogout      = "/auth/logout"
)

type navItem struct {
	Key   string
	Label string
	Path  string
}

// navItems lists the entries n allows, in header order.
func navItems(n Nav) []navItem {
	all := []struct {
		ok bool
		navItem
	}{
		{n.Dashboard, navItem{"dashboard", "Dashboard", PathDashboard}},
		{n.DeadLetters, navItem{"deadletters", "Dead letters", PathDeadLetters}},
		{n.Groups, navItem{"groups", "Groups", PathGroups}},
		{n.Approvals, navItem{"approvals", "Approvals", PathApprovals}},
		{n.Audit, navItem{"audit", "Audit", PathAudit}},
		{n.Policy, navItem{"policy", "Policy", PathPolicy}},
		{n.Admin, navItem{"admin", "Admin", PathAdmin}},
		{n.Sessions, navItem{"sessions", "Sessions", PathSessions}},
		{n.Stop, navItem{"stop", "Stop replays", PathStop}},
	}
	var out []navItem
	for _, it := range all {
		if it.ok {
			out = append(out, it.navItem)
		}
	}
	return out
}

func displayName(u *User) string {
	if u.Name != "" {
		return u.Name
	}
	if u.Email != "" {
		return u.Email
	}
	return "signed in"
}

// emailLabel is u's email, marked when the provider did not verify it.
func emailLabel(u *User) string {
	if u.EmailVerified {
		return u.Email
	}
	return u.Email + " (unverified)"
}
