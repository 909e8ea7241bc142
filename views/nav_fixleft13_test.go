package views_test

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

// TestFixLeft13NavAdminMenu: the administration pages (policy, role
// bindings, sessions, the emergency stop) are one "Admin" menu in the
// header when a person has two or more of them (an approver's and an
// admin's header wrapped to two lines at 1024 px), a <details> that opens
// without JavaScript; one alone (everyone reads the policy) is a plain
// entry; the page shown, when it is in the menu, marks the menu and its
// entry.
func TestFixLeft13NavAdminMenu(t *testing.T) {
	t.Parallel()
	header := func(t *testing.T, n views.Nav, active string) func(string) int {
		p := page("x", active)
		p.User.Nav = n
		doc, _ := render(t, views.SignedOut(p))
		return func(sel string) int { return doc.Find(sel).Length() }
	}
	t.Run("Admin", func(t *testing.T) {
		t.Parallel()
		n := views.Nav{Dashboard: true, DeadLetters: true, Groups: true, Replays: true, Policy: true, Admin: true, Sessions: true, Stop: true}
		p := page("Role bindings", "admin")
		p.User.Nav = n
		doc, _ := render(t, views.SignedOut(p))
		nav := byTestID(doc, "nav")
		assert.Equal(t, 5, nav.Find(".nav__list > li").Length(), "four pages and the Admin menu")
		menu := byTestID(doc, "nav-admin-menu")
		require.Equal(t, 1, menu.Length())
		assert.Equal(t, "details", goquery.NodeName(menu))
		summary := menu.Find("summary")
		assert.Equal(t, "Admin", strings.TrimSpace(summary.Text()))
		assert.True(t, summary.HasClass("is-active"), "the page shown is in the menu")
		var keys []string
		menu.Find("a").Each(func(_ int, a *goquery.Selection) { keys = append(keys, a.AttrOr("data-testid", "")) })
		assert.Equal(t, []string{"nav-policy", "nav-admin", "nav-sessions", "nav-stop"}, keys)
		assert.Equal(t, "page", byTestID(doc, "nav-admin").AttrOr("aria-current", ""))
		assert.Equal(t, "/admin/bindings", byTestID(doc, "nav-admin").AttrOr("href", ""))
	})
	t.Run("Approver", func(t *testing.T) {
		t.Parallel()
		count := header(t, views.Nav{Dashboard: true, DeadLetters: true, Groups: true, Replays: true, Approvals: true, Awaiting: 3, Policy: true, Stop: true}, "dashboard")
		assert.Equal(t, 1, count(`[data-testid="nav-admin-menu"] [data-testid="nav-policy"]`))
		assert.Equal(t, 1, count(`[data-testid="nav-admin-menu"] [data-testid="nav-stop"]`))
		assert.Equal(t, 0, count(`[data-testid="nav-admin-menu"] summary.is-active`), "the dashboard is not in the menu")
		assert.Equal(t, 1, count(`.nav__list > li > [data-testid="nav-approvals"] [data-testid="nav-approvals-count"]`))
	})
	t.Run("OnCallPolicyAlone", func(t *testing.T) {
		t.Parallel()
		count := header(t, views.Nav{Dashboard: true, DeadLetters: true, Groups: true, Replays: true, Policy: true}, "policy")
		assert.Zero(t, count(`[data-testid="nav-admin-menu"]`), "no menu of one")
		assert.Equal(t, 1, count(`.nav__list > li > a[data-testid="nav-policy"][aria-current="page"]`))
	})
}
