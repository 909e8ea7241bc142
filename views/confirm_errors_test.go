package views_test

import (
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

// TestReplayConfirmErrorSummary: a refused confirm page opens on a
// summary of its errors, before the first group, in the order of their
// fields on the page, each linked to its field; the selection's own
// error (the page's flash) is not repeated, nor are the requests' errors
// it stands for. A refused payload edit alone says the payload was not
// saved, not that nothing was requested.
func TestReplayConfirmErrorSummary(t *testing.T) {
	t.Parallel()
	g := blockedGroup()
	m := views.ReplayConfirmModel{
		Action: "/replay/batches/b1", Groups: []views.ReplayGroup{g}, Requestable: true,
		Forms:  []views.PayloadEdit{{DeadLetterID: 81, MsgID: "m-81", URL: "/replay/requests/7/items/81/payload"}},
		Errors: map[string]string{"reason": "Say why.", "rate-7": "Too fast.", "payload-81": "Not JSON.", "request-7": "Refused."},
	}
	doc, _ := render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), m))
	summary := doc.Find(`[data-testid="replay-error-summary"]`)
	require.Equal(t, 1, summary.Length())
	assert.Equal(t, "alert", summary.AttrOr("role", ""))
	assert.Contains(t, summary.Text(), "Nothing was requested")
	all := doc.Find("*")
	assert.Less(t, all.IndexOfSelection(summary), all.IndexOfSelection(doc.Find(`[data-testid="replay-group"]`).First()), "before the groups")
	var links []string
	summary.Find("li").Each(func(_ int, li *goquery.Selection) { links = append(links, li.Find("a").AttrOr("href", "")) })
	assert.Equal(t, []string{"#replay-group-7", "#f-rate-7", "#reason", "#payload-81"}, links)
	assert.Equal(t, 1, doc.Find(`#replay-group-7`).Length(), "the group's link has its target")

	m.Errors = map[string]string{"payload-81": "Not JSON."}
	doc, _ = render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), m))
	assert.Contains(t, doc.Find(`[data-testid="replay-error-summary"]`).Text(), "The payload was not saved")

	m.Errors = map[string]string{"selection": "Nothing was requested: no item can be replayed.", "request-7": "Nothing of this can be replayed."}
	doc, _ = render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), m))
	assert.Zero(t, doc.Find(`[data-testid="replay-error-summary"]`).Length(), "the flash says it")

	m.Errors = nil
	doc, _ = render(t, views.ReplayConfirm(page("Confirm replay", "deadletters"), m))
	assert.Zero(t, doc.Find(`[data-testid="replay-error-summary"]`).Length(), "no summary without errors")
}
