package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall10RefusedConfirmSaysSoAtTheTop: the confirm page of a
// group's replay lists every item (a table row each), then the rate per
// request, then the reason and "Request replay" at the bottom. The
// on-call sets a rate over the class's ceiling and presses Request
// replay: the page comes back (422) scrolled to its top, looking exactly
// as before — the only word of the refusal is at the rate field, below
// the item tables (on the screens server a 13-item group puts it ~1,400 px
// down: /tmp/rc10/confirm-rate-422-1024.png shows the 1024×800 view after
// the refusal, no error in sight). Nothing at the top says the request was
// not made, and no field takes the focus; a tired on-call believes it was
// submitted, or that the button does nothing. (The request page, by
// contrast, puts a refusal in an alert at its top.)
//
// Severity: medium. Expected: a refused confirm page says so where the
// page opens (an alert before the item tables), or focuses the field in
// error.
func TestRevOncall10RefusedConfirmSaysSoAtTheTop(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	var ids []int64
	for i := range 8 {
		ids = append(ids, seed(t, b, "acme", "search.index_update", fmt.Sprintf("rvo10-rate-%d", i), nil))
	}
	confirm := draftPage(t, b, oncall, ids...)
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	rate, ok := d.Find(`input[name^="rate-"]`).Attr("name")
	require.True(t, ok, "the confirm page asks for a rate")

	resp := b.Do(t, oncall, "POST", confirm, url.Values{rate: {"99999"}, "reason": {"shard 4 is back after INC-77"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	back := resp.Doc(t)
	require.NotEmpty(t, textOf(back, `[data-testid="field-error-`+rate+`"]`), "the refusal is at the rate field")

	all := back.Find("*")
	firstItem := all.IndexOfSelection(back.Find(`[data-testid="replay-item"]`).First())
	require.Positive(t, firstItem)
	seenFirst := false
	back.Find(`[role="alert"], .flash, .alert--error`).Each(func(_ int, s *goquery.Selection) {
		if _, hidden := s.Attr("hidden"); !hidden && s.Text() != "" && all.IndexOfSelection(s) < firstItem {
			seenFirst = true
		}
	})
	_, focused := back.Find(`input[name="` + rate + `"]`).Attr("autofocus")
	assert.True(t, seenFirst || focused,
		"the refused confirm page (422) shows its only error at the rate field, below %d item rows; nothing at the top says it was refused",
		back.Find(`[data-testid="replay-item"]`).Length())
}
