package views

import "strconv"

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
	// Count is shown beside the label when above 0 (Title says what it
	// counts).
	Count int
	Title string
}

// navItems lists the entries n allows, in header order, but the
// administration pages (adminItems).
func navItems(n Nav) []navItem {
	return allowed([]allowedItem{
		{n.Dashboard, navItem{"dashboard", "Dashboard", PathDashboard, 0, ""}},
		{n.DeadLetters, navItem{"deadletters", "Dead letters", PathDeadLetters, 0, ""}},
		{n.Groups, navItem{"groups", "Groups", PathGroups, 0, ""}},
		{n.Replays, navItem{"replays", "Replays", PathReplays, 0, ""}},
		{n.Approvals, navItem{"approvals", "Approvals", PathApprovals, n.Awaiting, "waiting for your approval"}},
		{n.Audit, navItem{"audit", "Audit", PathAudit, 0, ""}},
	})
}

// adminItems lists the administration pages n allows: the policy table,
// role bindings, sessions and the emergency stop. Two or more are one
// "Admin" menu in the header, so that it fits one line at 1024 px
// whatever the roles; one alone is a plain entry (everyone reads the
// policy: an on-call's header has no menu of one).
func adminItems(n Nav) []navItem {
	return allowed([]allowedItem{
		{n.Policy, navItem{"policy", "Policy", PathPolicy, 0, ""}},
		{n.Admin, navItem{"admin", "Role bindings", PathAdmin, 0, ""}},
		{n.Sessions, navItem{"sessions", "Sessions", PathSessions, 0, ""}},
		{n.Stop, navItem{"stop", "Stop replays", PathStop, 0, ""}},
	})
}

// allowedItem is a navigation entry and whether the person may see it.
type allowedItem struct {
	ok bool
	navItem
}

func allowed(all []allowedItem) []navItem {
	var out []navItem
	for _, it := range all {
		if it.ok {
			out = append(out, it.navItem)
		}
	}
	return out
}

// hasKey reports whether the page active is one of items.
func hasKey(items []navItem, active string) bool {
	for _, it := range items {
		if it.Key == active {
			return true
		}
	}
	return false
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

// NavCountMost is the largest count the navigation shows as a number;
// above it, "99+".
const NavCountMost = 99

// navCountText is a navigation count as shown: "7", or "99+" above
// NavCountMost.
func navCountText(n int) string { return countUpTo(n, NavCountMost) }

// countUpTo is a count read up to one more than most, as shown: "7", or
// "99+" above most (99).
func countUpTo(n, most int) string {
	if n > most {
		return strconv.Itoa(most) + "+"
	}
	return strconv.Itoa(n)
}
