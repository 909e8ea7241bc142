package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
)

// TestRev44PagingTheListKeepsFocusInTheResults: on the dead letter list a
// keyboard user focused "Older →" and pressed Enter; htmx swapped the
// results in, focus fell to the page (document.activeElement was BODY) and
// the next Tab went to "Skip to content": header and filters again, for
// every page. Focus now goes to the results' count, the next Tab goes on
// in the results, and the live region says the count. Typing in a filter
// swaps the results too, says their count and leaves focus in the field;
// Enter there sends the filter on purpose, and focus goes to the count.
func TestRev44PagingTheListKeepsFocusInTheResults(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{})
	publishRefunds(t, s, randomHex(4), 51) // a page of 50, and one more
	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.Open("/deadletters?tenant=acme")
	oncall.WaitUntil("the first page of 50, with Older", `document.querySelectorAll('[data-testid="deadletter-row"]').length === 50 &&
		document.querySelector('[data-testid="pager-next"]')`)
	const count = `document.querySelector('#results [data-testid="deadletter-count"]')`
	const said = `document.querySelector('[data-testid="results-status"]').textContent`

	oncall.do("focus Older", chromedp.Focus(chromedp.CSS(testID("pager-next"))))
	oncall.do("press Enter on Older", chromedp.KeyEvent(kb.Enter))
	oncall.WaitUntil("the second page", `document.querySelectorAll('[data-testid="deadletter-row"]').length === 1`)
	oncall.WaitUntil("focus on the second page's count, not on the page", `document.activeElement === `+count)
	oncall.WaitUntil("the count said", said+` !== "" && `+said+` === `+count+`.textContent.replace(/\s+/g, " ").trim()`)
	oncall.Screenshot("older")
	oncall.do("press Tab", chromedp.KeyEvent(kb.Tab))
	assert.True(t, eval[bool](oncall, "where Tab went", `!!document.activeElement.closest('#results')`),
		"Tab goes on in the results, not to %q", eval[string](oncall, "the focused element's text", `document.activeElement.textContent.trim()`))

	oncall.do("focus Newer", chromedp.Focus(chromedp.CSS(testID("pager-prev"))))
	oncall.do("press Enter on Newer", chromedp.KeyEvent(kb.Enter))
	oncall.WaitUntil("the first page again, focus on its count", `document.querySelectorAll('[data-testid="deadletter-row"]').length === 50 &&
		document.activeElement === `+count)

	// Typing: the list follows, the person goes on typing where they are.
	oncall.do("type in the error text", chromedp.SendKeys(chromedp.CSS("#f-q"), "nothing-matches"))
	oncall.WaitUntil("the filtered list in, its count said", `location.search.includes("q=nothing-matches") &&
		document.querySelectorAll('[data-testid="deadletter-row"]').length === 0 && `+said+` === `+count+`.textContent.replace(/\s+/g, " ").trim()`)
	assert.Equal(t, "f-q", eval[string](oncall, "the focused element", `document.activeElement.id`), "focus stays in the field typed in")

	// Enter sends the filter on purpose: focus to the results.
	oncall.do("press Enter in the error text", chromedp.SendKeys(chromedp.CSS("#f-q"), kb.Enter))
	oncall.WaitUntil("focus on the count after the filter sent", `document.activeElement === `+count)
	oncall.Screenshot("filtered")
}
