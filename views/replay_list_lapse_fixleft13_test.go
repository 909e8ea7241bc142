package views_test

import (
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

// TestFixLeft13ReplayListTimeLimit: the replays page's column that was
// "Expires" (what expires? the approval, the request?) is "Time limit",
// and each row says what of the request runs out: the draft, its first
// approval, or the time an approved request may start by; one past it
// shows "expired" as a badge and says what happened, not "expires".
func TestFixLeft13ReplayListTimeLimit(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	rows := []views.ReplayRow{
		{ID: 1, Status: "draft", Expires: at(time.Hour), Lapse: views.LapseDraft},
		{ID: 2, Status: "pending_approval", Expires: at(2 * time.Hour), Lapse: views.LapseApproval},
		{ID: 3, Status: "approved", Expires: at(3 * time.Hour), Lapse: views.LapseStart},
		{ID: 4, Status: "approved", Expires: at(-time.Minute), Lapse: views.LapseStart, Expired: true},
		{ID: 5, Status: "draft", Expires: at(-time.Hour), Lapse: views.LapseDraft, Expired: true},
		{ID: 6, Status: "done"},
	}
	doc, _ := render(t, views.ReplayList(page("Replays", "replays"), views.ReplayListModel{Action: views.PathReplays, Now: now, Rows: rows}))
	var heads []string
	doc.Find(`[data-testid="replays-table"] thead th`).Each(func(_ int, s *goquery.Selection) { heads = append(heads, strings.TrimSpace(s.Text())) })
	assert.Contains(t, heads, "Time limit")
	assert.NotContains(t, heads, "Expires")
	cell := func(id string) *goquery.Selection {
		c := doc.Find(`[data-testid="replay-row"][data-id="` + id + `"] [data-testid="replay-row-expires"]`)
		require.Equal(t, 1, c.Length(), id)
		return c
	}
	for id, want := range map[string]string{
		"1": "draft expires", "2": "first approval lapses", "3": "must start by",
		"4": "approval expired before it started", "5": "draft expired",
	} {
		assert.Equal(t, want, strings.TrimSpace(cell(id).Find(`[data-testid="replay-row-lapse"]`).Text()), id)
		assert.Equal(t, "Time limit", cell(id).AttrOr("data-label", ""), id)
	}
	for _, id := range []string{"1", "2", "3"} {
		assert.NotContains(t, cell(id).Text(), "expired", id)
	}
	for _, id := range []string{"4", "5"} {
		assert.Equal(t, "expired", strings.TrimSpace(cell(id).Find(".badge").First().Text()), id)
	}
	assert.Equal(t, "—", strings.TrimSpace(cell("6").Text()))
}
