package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb13MisspeltFilterWidensBulkActionToEverything: the dead letter
// list reads the parameters it knows and drops every other one without a
// word, and so do the actions by filter ("Discard all matching…", "Mark
// all matching resolved…", "Replay all matching…"), whose only guard is
// that the query is not empty (bulkFilter: "a bulk action needs a filter;
// to act on everything, select it explicitly"). A link with a misspelt
// filter (typ= for type=, opid= for op_id=, tenants= for tenant=: pasted
// in a chat, an alert's runbook link) shows the whole list, offers "Discard
// all matching…" on it, and the discard by filter freezes every open dead
// letter of the person's tenants (up to 1,000) under "These are the open
// dead letters the filter selects now". The audit log refuses such a
// filter since round 12 (TestFixAudit12UnknownFilterIsRefused), for the
// same reason: without it, the action covers more than was asked.
//
// Severity: medium. A tired on-call who follows "discard every
// search.index_update dead letter of this incident" from a link with a
// typo discards (or replays) the tenant's refunds and emails with it,
// after a confirmation page that says it holds what the filter selects.
// Expected: a parameter that is no filter of the list is refused with a
// message (422, as the audit log does), on the list and by every action
// by filter; never dropped.
func TestRevWeb13MisspeltFilterWidensBulkActionToEverything(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	refunds := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed"},
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed"})
	index := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", Error: "shard 4 unavailable"})
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	// "type" misspelt: the person means the search.index_update dead letters.
	q := "?" + url.Values{"typ": {"search.index_update"}}.Encode()

	list := b.Do(t, oncall, http.MethodGet, "/deadletters"+q, nil, page)
	if list.Status == http.StatusOK {
		doc := list.Doc(t)
		assert.Zero(t, doc.Find(`[data-testid="bulk-discard-filter"]`).Length(),
			"the list of %s ignores the filter it does not know and offers \"Discard all matching…\" on all %d rows",
			q, doc.Find(`[data-testid="row-link"]`).Length())
	}

	for _, path := range []string{"/deadletters/discard/filter", "/deadletters/resolve/filter", "/replay/filter"} {
		resp := b.Do(t, oncall, http.MethodPost, path+q, url.Values{"reason": {"index shard 4 incident"}}, page)
		if resp.Status == http.StatusSeeOther {
			// The replay by filter makes a draft and goes to its page.
			loc := resp.Header.Get("Location")
			require.NotEmpty(t, loc)
			resp = b.Do(t, oncall, http.MethodGet, loc, nil, page)
		}
		assert.GreaterOrEqual(t, resp.Status, 400, "POST %s%s: a filter it does not know is refused, not dropped", path, q)
		doc := resp.Doc(t)
		for _, id := range refunds {
			n := strconv.FormatInt(id, 10)
			offered := doc.Find(`input[name="id"][value="` + n + `"], a[href="/deadletters/` + n + `"]`).Length()
			assert.Zero(t, offered, "POST %s%s (%q) offers to act on refund dead letter %d, which the filter the person meant does not select",
				path, q, doc.Find("h1").First().Text(), id)
		}
	}

	// Confirmed as offered, the discard takes the refunds with it.
	confirm := b.Do(t, oncall, http.MethodPost, "/deadletters/discard/filter"+q, url.Values{"reason": {"index shard 4 incident"}}, page)
	if confirm.Status == http.StatusOK {
		form := url.Values{"reason": {"index shard 4 incident"}, "confirmed": {"1"}}
		confirm.Doc(t).Find(`input[name="id"]`).Each(func(_ int, s *goquery.Selection) {
			form.Add("id", s.AttrOr("value", ""))
		})
		done := b.Do(t, oncall, http.MethodPost, "/deadletters/discard", form, page)
		t.Logf("the confirmation as offered answers %d", done.Status)
	}
	for _, id := range refunds {
		var status string
		require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&status))
		assert.Equal(t, "quarantined", status, "refund dead letter %d was discarded by a filter on search.index_update (misspelt)", id)
	}
	var status string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT status FROM dead_letters WHERE id = $1`, index).Scan(&status))
	t.Logf("the search.index_update dead letter is %s", status)
}
