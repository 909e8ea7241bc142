package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall10SnoozeAsOfferedIsAccepted: an error group's panel (the
// dead letter list filtered by the group, "Snooze, owner, note…" from the
// groups page) offers "Snooze for [no time limit ▾] or until this many
// more arrive [ ] [Snooze]". As the page offers it — "no time limit"
// chosen, no count — the Snooze button is refused (422, "Snooze for a
// time, until more dead letters arrive, or both"): the default choice
// reads as "snooze with no end" and is the one combination the server
// never takes. A tired on-call who wants the noisy group out of the way
// presses Snooze and lands on a separate "Snooze the group" page. Seen:
// /tmp/rc10/group-shard-1024.png (the panel's defaults).
//
// Severity: low. Expected: the snooze form as rendered (its default
// choice) is one the server accepts (a default duration, or "no time
// limit" taken as it reads).
func TestRevOncall10SnoozeAsOfferedIsAccepted(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "rvo10-snooze", nil)

	groups := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t)
	link, ok := groups.Find(`[data-testid="group-row"] [data-testid="group-link"]`).First().Attr("href")
	require.True(t, ok, "the group links to its dead letters")
	page := b.Do(t, oncall, "GET", link, nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	// The panel's one form (fixleft12: owner, note, ticket and snooze are
	// saved by one Save; its snooze is "leave as it is" until chosen).
	form := page.Doc(t).Find(`form[data-testid="group-triage-form"]`).First()
	require.Equal(t, 1, form.Length(), "the group's panel offers a snooze")

	// The form as the browser would send it untouched.
	values := url.Values{}
	form.Find(`input[name]`).Each(func(_ int, in *goquery.Selection) {
		values.Set(in.AttrOr("name", ""), in.AttrOr("value", ""))
	})
	sel := form.Find(`select[name="for"]`)
	chosen := sel.Find(`option[selected]`)
	if chosen.Length() == 0 {
		chosen = sel.Find(`option`).First()
	}
	require.Equal(t, 1, chosen.Length())
	values.Set("for", chosen.AttrOr("value", ""))
	label := chosen.Text()

	resp := b.Do(t, oncall, "POST", form.AttrOr("action", ""), values, nil)
	assert.Equal(t, http.StatusSeeOther, resp.Status,
		"Snooze pressed with the panel's default %q (count empty) is refused: %s", label, textOf(resp.Doc(t), `.field-error:not([hidden])`))
}
