package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestTimePresets follows the list's time presets: each is a link whose
// range stays relative in the URL (from=now-1h, and the field shows it),
// the page lists exactly what arrived in that range, the count fetched
// after the page is the count of that range, and "All N matching" keeps
// it (the count fragment carries it to the menu, and the menu's actions
// carry the relative range). A broken relative time is a message at the
// field. The audit log offers the same presets.
func TestTimePresets(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	now := time.Now()
	ages := []time.Duration{5 * time.Minute, 40 * time.Minute, 3 * time.Hour, 30 * time.Hour, 5 * 24 * time.Hour, 20 * 24 * time.Hour}
	var ls []testfactory.Letter
	for i, age := range ages {
		ls = append(ls, testfactory.Letter{Tenant: "acme", MsgID: fmt.Sprintf("aged-%d", i), At: now.Add(-age)})
	}
	testfactory.DeadLetters(t, b.Pool, ls...)
	oncall, _ := b.SignIn(t, "acme:oncall")

	d := b.Do(t, oncall, "GET", "/deadletters", nil, nil).Doc(t)
	presets := map[string]string{}
	byID(d, "time-preset").Each(func(_ int, s *goquery.Selection) { presets[text(s)] = s.AttrOr("href", "") })
	want := map[string]struct {
		from string
		n    int
	}{"15 m": {"now-15m", 1}, "1 h": {"now-1h", 2}, "24 h": {"now-24h", 3}, "7 d": {"now-7d", 5}}
	require.Len(t, presets, len(want))
	for label, w := range want {
		href := presets[label]
		u, err := url.Parse(href)
		require.NoError(t, err, label)
		assert.Equal(t, w.from, u.Query().Get("from"), "%s: relative in the URL", label)
		resp := b.Do(t, oncall, "GET", href, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, label)
		page := resp.Doc(t)
		assert.Len(t, rowIDs(page), w.n, label)
		assert.Equal(t, w.from, page.Find(`input[name="from"]`).AttrOr("value", ""), "%s: the field shows the range as typed", label)
		assert.Equal(t, "true", byID(page, "time-preset").FilterFunction(func(_ int, s *goquery.Selection) bool {
			return text(s) == label
		}).AttrOr("aria-current", ""), "%s is marked", label)

		// The count after the page, and the "All matching" menu's share of it.
		countURL := byID(page, "deadletter-count").AttrOr("hx-get", "")
		var count string
		if countURL == "" {
			count = text(byID(page, "deadletter-count"))
		} else {
			frag := b.Do(t, oncall, "GET", countURL, nil, nil).Doc(t)
			count = text(byID(frag, "deadletter-count"))
			assert.Equal(t, fmt.Sprint(w.n), text(byID(frag, "bulk-matching")), "%s: the menu gets the count", label)
			assert.Equal(t, "true", byID(frag, "bulk-matching").AttrOr("hx-swap-oob", ""), label)
		}
		noun := "dead letters"
		if w.n == 1 {
			noun = "dead letter"
		}
		assert.Equal(t, fmt.Sprintf("%d %s", w.n, noun), count, label)
		action := byID(page, "bulk-filter-form").AttrOr("action", "")
		assert.Contains(t, action, "from=now-", "%s: replay all matching keeps the relative range", label)
	}

	resp := b.Do(t, oncall, "GET", "/deadletters?from=now-3x", nil, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status)
	assert.Contains(t, text(byID(resp.Doc(t), "field-error-from")), "now-1h")

	auditor, _ := b.SignIn(t, "*:auditor")
	a := b.Do(t, auditor, "GET", "/audit?from=now-15m", nil, nil)
	require.Equal(t, http.StatusOK, a.Status)
	assert.Equal(t, 4, byID(a.Doc(t), "time-preset").Length())
	assert.Positive(t, byID(a.Doc(t), "audit-row").Length(), "the sign-ins of the last 15 minutes")
}

// TestTimeZoneSetting: a person chooses to see times in their browser's
// zone; the choice is kept (a new sign-in of the same person still has it),
// every page says so to app.js, and the change is audited. A choice that is
// neither changes nothing.
func TestTimeZoneSetting(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, u := b.SignIn(t, "acme:viewer")
	zone := func(c *http.Client) string {
		return b.Do(t, c, "GET", "/deadletters", nil, nil).Doc(t).Find("html").AttrOr("data-time-zone", "")
	}
	assert.Equal(t, "utc", zone(c))
	resp := b.Do(t, c, "POST", "/settings/time", url.Values{"time_zone": {"local"}, "return_to": {"/deadletters?tenant=acme"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status)
	assert.Equal(t, "/deadletters?tenant=acme", resp.Header.Get("Location"))
	assert.Equal(t, "local", zone(c))
	assert.Equal(t, 1, b.AuditCount(t, "action = 'user.settings' AND actor_subject = $1", u.Subject))

	again, _ := b.SignInAs(t, testfactory.Again(u), "acme:viewer")
	assert.Equal(t, "local", zone(again), "kept for the person, not the browser")

	resp = b.Do(t, c, "POST", "/settings/time", url.Values{"time_zone": {"Mars/Olympus"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status)
	assert.Equal(t, "local", zone(c))
	assert.Equal(t, 1, b.AuditCount(t, "action = 'user.settings' AND actor_subject = $1", u.Subject))
}
