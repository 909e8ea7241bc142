package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// Hostile values a producer can put into any field.
const (
	scriptTag  = `<script>alert(1)</script>`
	attrBreak  = `"><img src=x onerror=alert(1)>`
	jsURL      = `javascript:alert(1)`
	badUTF8    = "bad\xff\xfe\xc3bytes"
	hostileAll = scriptTag + attrBreak
)

func byID(d *goquery.Document, id string) *goquery.Selection {
	return d.Find(`[data-testid="` + id + `"]`)
}

func rowIDs(d *goquery.Document) []string {
	var ids []string
	byID(d, "deadletter-row").Each(func(_ int, s *goquery.Selection) { ids = append(ids, s.AttrOr("data-id", "")) })
	return ids
}

func idStrings(ids []int64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprint(id)
	}
	return out
}

func text(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

func TestDeadLetterList(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	now := time.Now().Truncate(time.Second)
	var ls []testfactory.Letter
	for i := range 120 {
		ls = append(ls, testfactory.Letter{
			Tenant: []string{"acme", "globex"}[i%2], ItemType: []string{"orders.refund", "email.send", "search.index_update"}[i%3],
			Class: []string{"permanent", "transient"}[i%2], Error: fmt.Sprintf("gateway %d timed out", i),
			MsgID: fmt.Sprintf("msg-%d", i), OperationID: fmt.Sprintf("op-%d", i), CorrelationID: fmt.Sprintf("corr-%d", i),
			At: now.Add(-time.Duration(i) * time.Minute),
		})
	}
	ids := testfactory.DeadLetters(t, b.Pool, ls...) // ids[i] is i minutes old: newest first is ids order
	acmeIDs := func(keep func(i int) bool) []string {
		var out []string
		for i, id := range ids {
			if ls[i].Tenant == "acme" && keep(i) {
				out = append(out, fmt.Sprint(id))
			}
		}
		return out
	}
	c, _ := b.SignIn(t, "acme:viewer")

	t.Run("FirstPageOnlyOwnTenant", func(t *testing.T) {
		resp := b.Do(t, c, "GET", "/deadletters", nil, nil)
		require.Equal(t, http.StatusOK, resp.Status)
		d := resp.Doc(t)
		want := acmeIDs(func(int) bool { return true })
		assert.Equal(t, want[:50], rowIDs(d), "newest first, acme only")
		assert.Equal(t, "60 dead letters", text(byID(d, "deadletter-count")))
		_, keynav := byID(d, "deadletter-table").Attr("data-keynav")
		assert.True(t, keynav)
		_, hotkey := d.Find(`input[name="q"]`).Attr("data-hotkey-focus")
		assert.True(t, hotkey, "/ focuses the search")
		assert.Zero(t, d.Find(`input[type="checkbox"]`).Length(), "a viewer has no bulk action: no checkboxes")
		oncall, _ := b.SignIn(t, "acme:oncall")
		d = b.Do(t, oncall, "GET", "/deadletters", nil, nil).Doc(t)
		assert.Equal(t, 50, d.Find(`input[type="checkbox"][name="id"][form="deadletter-selection"]`).Length(), "selection checkboxes")
		assert.Equal(t, "page", byID(d, "nav-deadletters").AttrOr("aria-current", ""))
		assert.NotContains(t, resp.Body, "globex")
	})

	t.Run("KeysetNextAndPrevious", func(t *testing.T) {
		d := b.Do(t, c, "GET", "/deadletters?type=orders.refund&status=quarantined", nil, nil).Doc(t)
		want := acmeIDs(func(i int) bool { return ls[i].ItemType == "orders.refund" })
		require.Len(t, want, 20)
		assert.Equal(t, want, rowIDs(d))
		assert.Zero(t, byID(d, "pager").Length(), "one page")

		all := b.Do(t, c, "GET", "/deadletters", nil, nil).Doc(t)
		next := byID(all, "pager-next").AttrOr("href", "")
		require.True(t, strings.HasPrefix(next, "/deadletters?before="), next)
		assert.Zero(t, byID(all, "pager-prev").Length())
		page2 := b.Do(t, c, "GET", next, nil, nil).Doc(t)
		assert.Equal(t, acmeIDs(func(int) bool { return true })[50:], rowIDs(page2))
		assert.Zero(t, byID(page2, "pager-next").Length(), "last page")
		prev := byID(page2, "pager-prev").AttrOr("href", "")
		require.True(t, strings.HasPrefix(prev, "/deadletters?after="), prev)
		back := b.Do(t, c, "GET", prev, nil, nil).Doc(t)
		assert.Equal(t, rowIDs(all), rowIDs(back), "previous page is the first page again")
		assert.Zero(t, byID(back, "pager-prev").Length(), "nothing newer than the newest")
	})

	t.Run("Filters", func(t *testing.T) {
		for _, tc := range []struct {
			query string
			keep  func(i int) bool
		}{
			{"tenant=acme", func(int) bool { return true }},
			{"type=email.send", func(i int) bool { return ls[i].ItemType == "email.send" }},
			{"class=permanent", func(i int) bool { return ls[i].Class == "permanent" }},
			{"class=transient", func(int) bool { return false }}, // acme letters are all permanent
			{"status=unresolved", func(int) bool { return true }},
			{"status=resolved", func(int) bool { return false }},
			{"subject=app.acme.email", func(i int) bool { return ls[i].ItemType == "email.send" }},
			{"msg_id=msg-4", func(i int) bool { return i == 4 }},
			{"op_id=op-6", func(i int) bool { return i == 6 }},
			{"corr_id=corr-8", func(i int) bool { return i == 8 }},
			{"corr_id=corr-9", func(int) bool { return false }}, // globex's
			{"q=GATEWAY+1", func(i int) bool { return strings.HasPrefix(fmt.Sprint(i), "1") }},
			{"from=" + url.QueryEscape(now.Add(-10*time.Minute).UTC().Format("2006-01-02T15:04")) + "&to=" + url.QueryEscape(now.Add(-2*time.Minute).UTC().Format("2006-01-02T15:04")),
				func(i int) bool { return i >= 3 && i <= 10 }}, // minutes, UTC; the end excluded
			{"group=" + dlq.Fingerprint(dlq.ClassPermanent, "gateway 0 timed out", ""), func(int) bool { return true }},
		} {
			resp := b.Do(t, c, "GET", "/deadletters?"+tc.query+"&count=1", nil, nil)
			require.Equal(t, http.StatusOK, resp.Status, tc.query)
			d := resp.Doc(t)
			want := acmeIDs(tc.keep)
			if len(want) > 50 {
				want = want[:50]
			}
			assert.Equal(t, want, nilIfNone(rowIDs(d)), tc.query)
			if len(want) == 0 {
				assert.Equal(t, 1, byID(d, "empty-state").Length(), tc.query)
			}
			n := len(acmeIDs(tc.keep))
			assert.Equal(t, countWords(n), text(byID(d, "deadletter-count")), tc.query)
		}
	})

	t.Run("GroupChip", func(t *testing.T) {
		fp := dlq.Fingerprint(dlq.ClassPermanent, "gateway 0 timed out", "")
		d := b.Do(t, c, "GET", "/deadletters?group="+fp+"&type=email.send", nil, nil).Doc(t)
		assert.Contains(t, text(byID(d, "group-filter-chip")), fp)
		assert.Equal(t, "/deadletters?type=email.send", byID(d, "group-filter-clear").AttrOr("href", ""))
		assert.Equal(t, fp, d.Find(`input[type="hidden"][name="group"]`).AttrOr("value", ""), "the filter form keeps the group")
	})

	t.Run("InvalidFilter422", func(t *testing.T) {
		resp := b.Do(t, c, "GET", "/deadletters?q=ab&from=yesterday&status=maybe&class=fatal&tenant=globex&before=%21%21&group=XYZ", nil, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.Status)
		d := resp.Doc(t)
		for _, f := range []string{"q", "from", "status", "class", "tenant"} {
			assert.Equal(t, 1, byID(d, "field-error-"+f).Length(), f)
		}
		summary := text(byID(d, "filter-errors"))
		assert.Contains(t, summary, "Page:")
		assert.Contains(t, summary, "Group:")
		assert.Zero(t, byID(d, "deadletter-row").Length())
		assert.Equal(t, "ab", d.Find(`input[name="q"]`).AttrOr("value", ""), "what was typed stays")
	})

	t.Run("CountFetchedApart", func(t *testing.T) {
		resp := b.Do(t, c, "GET", "/deadletters?q=timed+out", nil, nil)
		d := resp.Doc(t)
		count := byID(d, "deadletter-count")
		assert.Equal(t, "false", count.AttrOr("data-counted", ""))
		assert.Equal(t, "/deadletters/count?q=timed+out", count.AttrOr("hx-get", ""))
		assert.Equal(t, "load", count.AttrOr("hx-trigger", ""))
		// Inside <noscript>, which parsers read as text when scripts run.
		assert.Contains(t, resp.Body, `<a href="/deadletters?count=1&amp;q=timed+out" data-testid="count-now">`, "without JavaScript: a link")
		frag := b.Do(t, c, "GET", "/deadletters/count?q=timed+out", nil, nil)
		require.Equal(t, http.StatusOK, frag.Status)
		assert.Equal(t, "60 dead letters", text(byID(frag.Doc(t), "deadletter-count")))
		assert.NotContains(t, frag.Body, "<html", "a fragment")
		bad := b.Do(t, c, "GET", "/deadletters/count?q=ab", nil, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	})

	t.Run("Empty", func(t *testing.T) {
		other, _ := b.SignIn(t, "initech:viewer")
		d := b.Do(t, other, "GET", "/deadletters", nil, nil).Doc(t)
		assert.Equal(t, 1, byID(d, "empty-state").Length())
		assert.Zero(t, byID(d, "deadletter-table").Length())
		assert.Equal(t, "0 dead letters", text(byID(d, "deadletter-count")))
	})
}

func nilIfNone(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func countWords(n int) string {
	if n == 1 {
		return "1 dead letter"
	}
	return fmt.Sprintf("%d dead letters", n)
}

func TestDeadLetterListEscapesHostileValues(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	testfactory.DeadLetters(t, b.Pool, testfactory.Letter{
		Tenant: "acme", ItemType: "email.send", Error: hostileAll + " " + badUTF8, MsgID: attrBreak, Subject: jsURL,
		CorrelationID: scriptTag, Class: "permanent",
	})
	c, _ := b.SignIn(t, "acme:viewer")
	resp := b.Do(t, c, "GET", "/deadletters?q="+url.QueryEscape(attrBreak), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	d := resp.Doc(t)
	require.Equal(t, 1, byID(d, "deadletter-row").Length())
	assert.Contains(t, byID(d, "row-link").Text(), scriptTag+attrBreak, "shown as text")
	assert.Contains(t, byID(d, "row-link").Text(), "\uFFFD", "invalid UTF-8 shown with replacement characters")
	assert.Equal(t, attrBreak, byID(d, "row-msgid").Text())
	assert.Equal(t, attrBreak, d.Find(`input[name="q"]`).AttrOr("value", ""), "the search box holds the text")
	assertNothingExecutable(t, d, resp.Body)
}

// assertNothingExecutable checks that data made no script, no element with
// an event handler, no <img> and no javascript: URL.
func assertNothingExecutable(t *testing.T, d *goquery.Document, body string) {
	t.Helper()
	assert.NotContains(t, body, scriptTag)
	assert.NotContains(t, body, "<img")
	d.Find("script").Each(func(_ int, s *goquery.Selection) {
		assert.True(t, strings.HasPrefix(s.AttrOr("src", ""), "/static/"), "script %q", s.AttrOr("src", ""))
	})
	d.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Nodes[0].Attr {
			name := strings.ToLower(a.Key)
			assert.False(t, strings.HasPrefix(name, "on"), "event handler %s=%q", a.Key, a.Val)
			switch name {
			case "href", "src", "action", "hx-get", "hx-post", "formaction":
				assert.False(t, strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:"), "%s=%q", a.Key, a.Val)
			}
		}
	})
}
