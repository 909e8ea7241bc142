package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
)

// TestFixLeft13NavOneLine: at 1024 px every role's header is one line (the
// navigation's entries side by side, "Sign out" inside the window: an
// approver's and an admin's wrapped to two before the administration pages
// became one "Admin" menu), and the admin's menu works from the keyboard:
// Enter on its summary opens it, Escape closes it, an entry leads to its
// page, which the menu then marks.
func TestFixLeft13NavOneLine(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{})
	b := newBrowser(t)
	for _, email := range []string{userOncall, userApprover, userAuditor, userAdmin, userViewer} {
		p := b.newSession(t, s.Console.URL, strings.Split(email, "@")[0])
		p.do("size the viewport", chromedp.EmulateViewport(1024, 800))
		p.LoginAs(email)
		p.Open("/")
		tops := eval[[]float64](p, "the tops of the navigation's entries",
			`[...document.querySelectorAll('.nav__list > li')].map(e => e.getBoundingClientRect().top)`)
		for _, top := range tops {
			assert.Equal(t, tops[0], top, "%s: every entry on the first line: %v", email, tops)
		}
		right := eval[float64](p, "the right edge of Sign out", `document.querySelector('[data-testid="logout"]').getBoundingClientRect().right`)
		assert.LessOrEqual(t, right, 1024.0, "%s: Sign out inside the window", email)
		navBottom := eval[float64](p, "the navigation's bottom", `document.querySelector('[data-testid="nav"]').getBoundingClientRect().bottom`)
		barBottom := eval[float64](p, "the header's bottom", `document.querySelector('.topbar').getBoundingClientRect().bottom`)
		assert.LessOrEqual(t, navBottom, barBottom, "%s: the navigation inside the header", email)
		if email != userAdmin {
			continue
		}
		summary := testID("nav-admin-menu-toggle")
		p.do("focus the Admin menu", chromedp.Focus(chromedp.CSS(summary)))
		p.do("open it with Enter", chromedp.KeyEvent(kb.Enter))
		p.WaitUntil("the menu open", `document.querySelector('[data-testid="nav-admin-menu"]').open`)
		p.do("close it with Escape", chromedp.KeyEvent(kb.Escape))
		p.WaitUntil("the menu closed, its summary focused", `!document.querySelector('[data-testid="nav-admin-menu"]').open &&
			document.activeElement === document.querySelector(`+jsString(summary)+`)`)
		p.Click(summary)
		p.ClickLoads(testID("nav-admin"), "the role bindings page", `location.pathname === "/admin/bindings"`)
		assert.Equal(t, "page", p.Attr(testID("nav-admin"), "aria-current"))
		assert.Contains(t, p.Attr(summary, "class"), "is-active", fmt.Sprintf("the menu holds the page shown (%s)", p.Location()))
	}
}
