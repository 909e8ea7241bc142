package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// opHeader is an operation id header, for a same_operation item.
func opHeader(op string) map[string][]string { return map[string][]string{dlq.HeaderOperationID: {op}} }

// draftPage selects ids through the list's form and returns the confirm
// page's path.
func draftPage(t *testing.T, b *testfactory.Console, c *http.Client, ids ...int64) string {
	t.Helper()
	form := url.Values{}
	for _, id := range ids {
		form.Add("id", fmt.Sprint(id))
	}
	resp := b.Do(t, c, "POST", "/replay", form, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	return strings.SplitN(resp.Header.Get("Location"), "?", 2)[0]
}

// group is the confirm page's group of class.
func group(d *goquery.Document, class string) *goquery.Selection {
	return d.Find(fmt.Sprintf(`[data-testid="replay-group"][data-class="%s"]`, class))
}

// TestConfirmSaysWhatEachRequestDoesOnSubmit: one selection makes a
// request per tenant and class, and each group says, from the rules, what
// the submit does to it: publish at once, or wait for approvers who are
// not the requester.
func TestConfirmSaysWhatEachRequestDoesOnSubmit(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	index := seed(t, b, "globex", "search.index_update", "doc-g", nil)
	refund := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	mail := seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))

	d := b.Do(t, oncall, "GET", draftPage(t, b, oncall, index, refund, mail), nil, nil).Doc(t)
	for _, tc := range []struct {
		class, approvals, says string
	}{
		{"rebuildable", "0", "publishes as soon as you submit"},
		{"manual", "2", "waits for 2 approvers, not you"},
		{"same_operation", "1", "waits for 1 approver, not you"},
	} {
		on := group(d, tc.class).Find(`[data-testid="replay-on-submit"]`)
		require.Equal(t, 1, on.Length(), tc.class)
		assert.Equal(t, tc.approvals, on.AttrOr("data-approvals", ""), tc.class)
		assert.Contains(t, on.Text(), tc.says, tc.class)
	}
	assert.Contains(t, textOf(d, `[data-testid="replay-summary"]`), "3 to replay.")
}

// TestSubmitOfSeveralRequestsListsEach: a submit that made more than one
// request lands on a page listing every one, its items and what it does
// next (one publishes, one waits), and so does the batch's address later;
// a submit of one request lands on it with a flash that says what it does
// next, never that it runs when it waits.
func TestSubmitOfSeveralRequestsListsEach(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	index := seed(t, b, "globex", "search.index_update", "doc-g", nil)
	mail := seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))

	confirm := draftPage(t, b, oncall, index, mail)
	resp := b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"consumers fixed"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.Equal(t, confirm, resp.Header.Get("Location"), "to the list of what it became")

	page := b.Do(t, oncall, "GET", confirm, nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	d := page.Doc(t)
	assert.Contains(t, textOf(d, `[data-testid="flash"]`), "2 requests")
	rows := d.Find(`[data-testid="submitted-request"]`)
	require.Equal(t, 2, rows.Length())
	byStatus := map[string]*goquery.Selection{}
	rows.Each(func(_ int, r *goquery.Selection) { byStatus[r.AttrOr("data-status", "")] = r })
	approved, waits := byStatus["approved"], byStatus["pending_approval"]
	require.NotNil(t, approved, "the rebuildable request is approved at once")
	require.NotNil(t, waits, "the same operation request waits")
	assert.Contains(t, approved.Text(), "globex")
	assert.Contains(t, approved.Find(`[data-testid="submitted-next"]`).Text(), "approved at once")
	assert.Contains(t, waits.Text(), "acme")
	assert.Contains(t, waits.Find(`[data-testid="submitted-next"]`).Text(), "waits for 1 approver, not you")
	assert.Equal(t, "0 replayed · 1 to go", strings.TrimSpace(waits.Find(`[data-testid="submitted-items"]`).Text()))

	one := draftPage(t, b, oncall, seed(t, b, "acme", "email.send", "mail-2", opHeader("op-2")))
	resp = b.Do(t, oncall, "POST", one, url.Values{"reason": {"smtp relay fixed"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/replay/requests/"), "one request: its own page")
	flash := textOf(b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t), `[data-testid="flash"]`)
	assert.Contains(t, flash, "waits for 1 approver, not you")
	assert.NotContains(t, flash, "publishes now")
}

// TestItemCountsAgreeAcrossPages: the replays list, the approvals list,
// the emergency stop page and the request's own progress count a
// request's items one way, each outcome named, a blocked item as blocked
// (not as done).
func TestItemCountsAgreeAcrossPages(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{
		seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1")),
		seed(t, b, "acme", "email.send", "mail-2", opHeader("op-2")),
		seed(t, b, "acme", "email.send", "mail-noop", nil), // no operation id: blocked
	}, replay.SubmitInput{})
	const want = "0 replayed · 2 to go · 1 blocked"

	list := b.Do(t, approver, "GET", "/replay/requests", nil, nil).Doc(t)
	assert.Equal(t, want, strings.TrimSpace(row(list, req.ID).Find(`[data-testid="replay-row-items"]`).Text()), "the replays list")
	approvals := b.Do(t, approver, "GET", "/approvals", nil, nil).Doc(t)
	assert.Equal(t, want, textOf(approvals, `[data-testid="approval-items"]`), "the approvals list")
	stop := b.Do(t, approver, "GET", "/replay/stop", nil, nil).Doc(t)
	assert.Equal(t, want, textOf(stop, `[data-testid="stop-request-items"]`), "the stop page")
	page := b.Do(t, approver, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil).Doc(t)
	assert.Contains(t, textOf(page, `[data-testid="progress-summary"]`), want, "the request's progress")
	assert.Equal(t, "2", textOf(page, `[data-testid="progress-pending"]`), "to go: the two waiting for approval")
}

// TestReplaysPageDraftsShowTheirClassAndStayOutOfCounts: a draft of a
// class that needs approvers says how many it will need, not "not
// needed"; the items of drafts (which may never be submitted) are not
// counted among outcomes, while drafts keep their own status count.
func TestReplaysPageDraftsShowTheirClassAndStayOutOfCounts(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, oncall := b.SignIn(t, "acme:oncall")
	_, manual := testfactory.Draft(t, b.Replays, oncall.Actor, seed(t, b, "acme", "orders.refund", "refund-1", nil))
	_, blocked := testfactory.Draft(t, b.Replays, oncall.Actor, seed(t, b, "acme", "email.send", "mail-noop", nil))

	d := b.Do(t, c, "GET", "/replay/requests", nil, nil).Doc(t)
	assert.Equal(t, "2 on submit", strings.TrimSpace(row(d, manual[0].ID).Find(`[data-testid="replay-row-approvals"]`).Text()))
	assert.Equal(t, "1 on submit", strings.TrimSpace(row(d, blocked[0].ID).Find(`[data-testid="replay-row-approvals"]`).Text()))
	assert.Zero(t, d.Find(`[data-testid="replay-count-outcome"]`).Length(), "no draft's item is counted as an outcome")
	assert.Equal(t, "2", d.Find(`[data-testid="replay-count-status"][data-status="draft"]`).AttrOr("data-n", ""), "drafts are their own bucket")
}

// TestStopPageLeavesOutDrafts: the emergency stop page lists what may
// publish or wait for approval, never a draft (nothing of it runs, and
// its page is its requester's alone).
func TestStopPageLeavesOutDrafts(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	_, drafts := testfactory.Draft(t, b.Replays, oncall.Actor, seed(t, b, "acme", "email.send", "mail-d", opHeader("op-d")))
	waits := testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))}, replay.SubmitInput{})

	d := b.Do(t, approver, "GET", "/replay/stop", nil, nil).Doc(t)
	rows := d.Find(`[data-testid="stop-request"]`)
	require.Equal(t, 1, rows.Length())
	assert.Contains(t, rows.Text(), fmt.Sprintf("#%d", waits.ID))
	assert.NotContains(t, d.Find(`[data-testid="stop-requests"]`).Text(), fmt.Sprintf("#%d", drafts[0].ID))
	assert.Contains(t, rows.Text(), "same operation", "the class as every page labels it")
	assert.NotContains(t, rows.Text(), "same_operation")
}

// TestRequestPageFormsHaveTheirOwnFields: every element id of a request
// page is unique, so the reject form's label focuses its own reason; the
// emergency stop is offered for a request that publishes, not for one
// that waits for approval (that one is rejected or cancelled).
func TestRequestPageFormsHaveTheirOwnFields(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	waits := testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))}, replay.SubmitInput{})
	runs := testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "search.index_update", "doc-1", nil)}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, runs.Status)

	uniqueIDs := func(d *goquery.Document) {
		t.Helper()
		seen := map[string]bool{}
		d.Find("[id]").Each(func(_ int, s *goquery.Selection) {
			id := s.AttrOr("id", "")
			assert.False(t, seen[id], "id %q twice", id)
			seen[id] = true
		})
	}
	d := b.Do(t, approver, "GET", fmt.Sprintf("/replay/requests/%d", waits.ID), nil, nil).Doc(t)
	uniqueIDs(d)
	reject := d.Find(`[data-testid="reject-form"]`)
	require.Equal(t, 1, reject.Length())
	label := reject.Find("label").AttrOr("for", "")
	assert.Equal(t, "reason", reject.Find("#"+label).AttrOr("name", ""), "the reject label's field is in the reject form")
	assert.Zero(t, d.Find(`[data-testid="stop-form"]`).Length(), "no emergency stop while it waits for approval")

	d = b.Do(t, approver, "GET", fmt.Sprintf("/replay/requests/%d", runs.ID), nil, nil).Doc(t)
	uniqueIDs(d)
	stop := d.Find(`[data-testid="stop-form"]`)
	require.Equal(t, 1, stop.Length(), "an approved request may be stopped")
	for _, l := range stop.Find("label").Nodes {
		for _, a := range l.Attr {
			if a.Key == "for" {
				assert.Equal(t, 1, stop.Find("#"+a.Val).Length(), "the stop label %q names a field of the stop form", a.Val)
			}
		}
	}

	resp := b.Do(t, approver, "POST", fmt.Sprintf("/replay/requests/%d/stop", runs.ID), url.Values{"reason": {"bad data"}, "confirm": {"stop please"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	d = resp.Doc(t)
	uniqueIDs(d)
	assert.NotEmpty(t, strings.TrimSpace(d.Find(`[data-testid="stop-form"] .field-error`).Text()), "the error under the stop form")
}

// TestApproverSeesWhyEachItemFailed: the request page's items show each
// dead letter's error class and the start of its error, as text; the
// cell's title says where the rest is (it held 1,000 characters of it
// until review rev-scale: up to 20,000 items a page, escaped).
func TestApproverSeesWhyEachItemFailed(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	long := "smtp 451 <b>try</b> again later: " + strings.Repeat("relay busy ", 200)
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "mail-1", OperationID: "op-1",
		Error: long, Class: "transient", Payload: []byte(`{}`)})
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{})

	resp := b.Do(t, approver, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	d := resp.Doc(t)
	item := d.Find(`[data-testid="replay-items"] [data-testid="replay-item"]`)
	require.Equal(t, 1, item.Length())
	assert.Equal(t, "transient", strings.TrimSpace(item.Find(`[data-testid="replay-item-error-class"]`).Text()))
	text := item.Find(`[data-testid="replay-item-error-text"]`)
	assert.True(t, strings.HasPrefix(strings.TrimSpace(text.Text()), "smtp 451 <b>try</b> again later"), text.Text())
	assert.Less(t, len([]rune(strings.TrimSpace(text.Text()))), 100, "cut short in the cell")
	assert.Zero(t, item.Find("b").Length(), "the error is text, not markup")
	assert.Equal(t, "The dead letter's page shows all of it.", text.AttrOr("title", ""))
	assert.Equal(t, fmt.Sprintf("/deadletters/%d", id), item.Find(`[data-testid="replay-item-msgid"] a`).AttrOr("href", ""))
}

// TestOutcomeTermsAreOneWordEach: the confirm page counts, heads and
// badges what is left out with the outcome names (skipped, blocked), and a
// rejected request's items are "not run" in its badge, count, bar and
// summary alike.
func TestOutcomeTermsAreOneWordEach(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, oncall := b.SignIn(t, "acme:oncall")
	_, approver := b.SignIn(t, "acme:approver")

	d := b.Do(t, c, "GET", draftPage(t, b, c, seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1")),
		seed(t, b, "acme", "email.send", "mail-noop", nil)), nil, nil).Doc(t)
	assert.Contains(t, textOf(d, `[data-testid="replay-summary"]`), "1 to replay · 1 blocked.")
	assert.Equal(t, "Skipped or blocked, and the rule that decided each", textOf(d, `[data-testid="replay-skipped-title"]`))
	assert.Equal(t, "blocked", textOf(d, `[data-testid="replay-skipped"] [data-testid="replay-item-verdict"] [data-testid="badge"]`))

	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "email.send", "mail-2", opHeader("op-2"))}, replay.SubmitInput{})
	require.NoError(t, b.Replays.Reject(context.Background(), req.ID, approver.Actor, replay.RejectInput{IntentHex: req.IntentHex(), Version: req.Version, Reason: "wrong template"}, quarantine.RequestMeta{}))
	resp := b.Do(t, c, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil)
	d = resp.Doc(t)
	assert.Contains(t, textOf(d, `[data-testid="replay-item-verdict"]`), "not run")
	assert.Equal(t, "1", textOf(d, `[data-testid="progress-not-run"]`))
	assert.Contains(t, textOf(d, `[data-testid="progress-summary"]`), "0 replayed · 1 not run")
	assert.Contains(t, d.Find(`[data-testid="progress-segment"]`).Text(), "1 not run")
	for _, old := range []string{"Never ran", "never ran", "not sent", "cancelled or not run"} {
		assert.NotContains(t, resp.Body, old)
	}
}
