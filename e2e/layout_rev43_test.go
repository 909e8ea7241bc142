package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev43DashboardTenantsAndSessionsFit: at 1280×800 the dashboard's
// Tenants table was 615 px in a 564 px frame (a fixed share of the row
// beside the chart), its last column cut to "ST…"; it now takes the width
// its columns need, and a phone still scrolls nothing sideways. The
// sessions page gave the identity (issuer|subject) most of the width and
// wrapped the people's emails; an email now keeps to one line.
func TestRev43DashboardTenantsAndSessionsFit(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{})
	testfactory.DeadLetters(t, s.DB,
		testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "rev43-layout-1"},
		testfactory.Letter{Tenant: "globex", ItemType: "orders.refund", MsgID: "rev43-layout-2"})
	b := newBrowser(t)
	const fits = `(() => { const t = document.querySelector('[data-testid="tenant-table"]');
		return [t.scrollWidth, t.closest('.table-wrap').clientWidth, document.documentElement.scrollWidth, window.innerWidth] })()`

	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	admin := b.newSession(t, s.Console.URL, "admin")
	admin.LoginAs(userAdmin)
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		oncall.do("size the viewport", chromedp.EmulateViewport(size[0], size[1]))
		oncall.Open("/")
		oncall.WaitUntil("the tenants table", `document.querySelectorAll('[data-testid="tenant-row"]').length === 2`)
		w := eval[[]float64](oncall, "the tenants table's widths", fits)
		assert.LessOrEqual(t, w[0], w[1], "%dpx: the tenants table (%v px) fits its frame (%v px)", size[0], w[0], w[1])
		assert.LessOrEqual(t, w[2], w[3], "%dpx: the page scrolls nothing sideways", size[0])
	}

	admin.do("size the viewport", chromedp.EmulateViewport(1280, 800))
	admin.Open("/admin/sessions")
	admin.WaitUntil("both people signed in", `document.querySelectorAll('[data-testid="session-email"]').length === 2`)
	lines := eval[[]float64](admin, "the lines of each email", `[...document.querySelectorAll('[data-testid="session-email"]')].map(e => {
		const r = document.createRange(); r.selectNodeContents(e); return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size })`)
	assert.Equal(t, []float64{1, 1}, lines, "each email on one line")
}
