package views_test

import (
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

// TestRev44ListsMarkWhereFocusGoesAfterAPage: paging a list (its pager
// swaps #results) left focus on nothing, and the next Tab went back to
// "Skip to content". Each list whose pager and filter swap #results marks
// what app.js needs to keep a keyboard in the results: its count inside
// #results, focusable by script only (tabindex -1), its pager, and a
// polite live region outside #results (which the swap keeps) to say the
// new count. The e2e test TestRev44PagingTheListKeepsFocusInTheResults
// drives it in Chromium.
func TestRev44ListsMarkWhereFocusGoesAfterAPage(t *testing.T) {
	t.Parallel()
	counted := sampleList()
	uncounted := sampleList()
	uncounted.Counted, uncounted.CountURL = false, "/deadletters/count?q=timeout"
	refused := sampleList()
	refused.Errors = map[string]string{"q": "3 characters or more"}
	groups := views.GroupListModel{Action: "/groups", Rows: sampleGroups(), Total: 539, Now: now, NextURL: "/groups?page=2"}
	for _, tc := range []struct {
		name, count string
		page        func() *goquery.Document
	}{
		{"DeadLetters", "deadletter-count", func() *goquery.Document {
			doc, _ := render(t, views.DeadLetterList(triagePage("Dead letters", "deadletters"), counted))
			return doc
		}},
		{"DeadLettersCountedLater", "deadletter-count", func() *goquery.Document {
			doc, _ := render(t, views.DeadLetterList(triagePage("Dead letters", "deadletters"), uncounted))
			return doc
		}},
		{"DeadLettersFilterRefused", "deadletter-count", func() *goquery.Document {
			doc, _ := render(t, views.DeadLetterList(triagePage("Dead letters", "deadletters"), refused))
			return doc
		}},
		{"ErrorGroups", "group-count", func() *goquery.Document {
			doc, _ := render(t, views.GroupList(triagePage("Error groups", "groups"), groups))
			return doc
		}},
		{"Audit", "audit-count", func() *goquery.Document {
			doc, _ := render(t, views.AuditList(page("Audit log", "audit"), auditModel()))
			return doc
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.page()
			focus := doc.Find(`#results [data-results-focus]`)
			require.Equal(t, 1, focus.Length(), "one place for focus in the results")
			assert.Equal(t, tc.count, focus.AttrOr("data-testid", ""), "the results' count")
			assert.Equal(t, "-1", focus.AttrOr("tabindex", ""), "focusable by script, not a Tab stop")
			assert.Equal(t, 1, doc.Find(`#results [data-results-pager] [data-testid="pager"]`).Length(), "the pager is marked")
			status := doc.Find(`[data-results-status]`)
			require.Equal(t, 1, status.Length())
			assert.Equal(t, "status", status.AttrOr("role", ""), "a polite live region")
			assert.Zero(t, status.Closest("#results").Length(), "outside #results, which the swap replaces")
		})
	}

	// The count the list fetches after the page is as focusable, so that
	// focus on it survives its swap (htmx focuses the element of the id
	// that had it).
	doc, _ := render(t, views.DeadLetterCount(views.DeadLetterCountModel{Count: 12, Fragment: true}))
	count := doc.Find(`#deadletter-count`)
	assert.Equal(t, "-1", count.AttrOr("tabindex", ""))
	_, marked := count.Attr("data-results-focus")
	assert.True(t, marked)
}
