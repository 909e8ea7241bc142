package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// text is the trimmed text of what sel finds in d.
func textOf(d *goquery.Document, sel string) string { return strings.TrimSpace(d.Find(sel).Text()) }

// row is the replays page's row of request id.
func row(d *goquery.Document, id int64) *goquery.Selection {
	return d.Find(fmt.Sprintf(`[data-testid="replay-row"][data-id="%d"]`, id))
}

// TestReplaysPageListsWhatTheViewerMaySee lists the requests of the
// viewer's tenants with their columns, filters them, pages by id, and
// never shows another tenant's requests or someone else's draft (whose
// page is a 404, audited).
func TestReplaysPageListsWhatTheViewerMaySee(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, me := b.SignIn(t, "acme:oncall")
	colleague, other := b.SignIn(t, "acme:oncall")
	_, outsider := b.SignIn(t, "globex:oncall")

	mail := testfactory.Request(t, b.Replays, me.Actor, []int64{seed(t, b, "acme", "email.send", "mail-1",
		map[string][]string{dlq.HeaderOperationID: {"op-1"}})}, replay.SubmitInput{})
	index := testfactory.Request(t, b.Replays, other.Actor, []int64{seed(t, b, "acme", "search.index_update", "doc-1", nil)}, replay.SubmitInput{})
	theirs := testfactory.Request(t, b.Replays, outsider.Actor, []int64{seed(t, b, "globex", "search.index_update", "doc-g", nil)}, replay.SubmitInput{})
	_, drafts := testfactory.Draft(t, b.Replays, other.Actor, seed(t, b, "acme", "search.index_update", "doc-2", nil))
	draft := drafts[0]

	resp := b.Do(t, oncall, "GET", "/replay/requests", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	assert.Equal(t, 2, d.Find(`[data-testid="replay-row"]`).Length(), "the two submitted requests of acme")
	assert.Zero(t, row(d, theirs.ID).Length(), "not globex's")
	assert.Zero(t, row(d, draft.ID).Length(), "not a colleague's draft")
	assert.Equal(t, fmt.Sprint(mail.ID), d.Find(`[data-testid="replay-row"]`).First().AttrOr("data-id", ""), "the viewer's own first")
	newest := b.Do(t, oncall, "GET", "/replay/requests?order=newest", nil, nil).Doc(t)
	assert.Equal(t, fmt.Sprint(index.ID), newest.Find(`[data-testid="replay-row"]`).First().AttrOr("data-id", ""), "newest first")

	r := row(d, mail.ID)
	assert.Equal(t, "pending_approval", r.AttrOr("data-status", ""))
	assert.Equal(t, "0 replayed · 1 to go", strings.TrimSpace(r.Find(`[data-testid="replay-row-items"]`).Text()))
	assert.Equal(t, "0 of 1", strings.TrimSpace(r.Find(`[data-testid="replay-row-approvals"]`).Text()))
	submitted, ok := r.Find(`[data-testid="replay-row-submitted"] time`).Attr("datetime")
	require.True(t, ok)
	assert.Equal(t, mail.SubmittedAt.UTC().Format(time.RFC3339), submitted, "the submitted time, not the draft's")
	assert.Contains(t, r.Text(), "(you)")
	assert.Equal(t, "not needed", strings.TrimSpace(row(d, index.ID).Find(`[data-testid="replay-row-approvals"]`).Text()))

	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"status=pending_approval", []int64{mail.ID}},
		{"mine=1", []int64{mail.ID}},
		{"class=rebuildable", []int64{index.ID}},
		{"tenant=acme&class=same_operation", []int64{mail.ID}},
		{fmt.Sprintf("order=newest&before=%d", index.ID), []int64{mail.ID}},
		{fmt.Sprintf("before=m%d", mail.ID), []int64{index.ID}},
	} {
		d := b.Do(t, oncall, "GET", "/replay/requests?"+tc.query, nil, nil).Doc(t)
		var got []int64
		d.Find(`[data-testid="replay-row"]`).Each(func(_ int, s *goquery.Selection) {
			var id int64
			fmt.Sscan(s.AttrOr("data-id", ""), &id)
			got = append(got, id)
		})
		assert.Equal(t, tc.want, got, tc.query)
	}
	bad := b.Do(t, oncall, "GET", "/replay/requests?tenant=globex&status=nonsense", nil, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	assert.NotContains(t, bad.Body, "doc-g")

	// Someone else's draft does not exist for anyone but its drafter.
	deniedBefore := b.AuditCount(t, `action = 'authz.denied'`)
	page := fmt.Sprintf("/replay/requests/%d", draft.ID)
	assert.Equal(t, http.StatusNotFound, b.Do(t, oncall, "GET", page, nil, nil).Status, "a colleague's draft")
	assert.Equal(t, http.StatusNotFound, b.Do(t, oncall, "GET", page+"/progress", nil, nil).Status, "its progress")
	assert.Equal(t, http.StatusNotFound, b.Do(t, oncall, "POST", page+"/cancel", url.Values{}, nil).Status, "cancel")
	assert.Equal(t, deniedBefore+3, b.AuditCount(t, `action = 'authz.denied'`), "each refusal audited")
	assert.Equal(t, http.StatusOK, b.Do(t, colleague, "GET", page, nil, nil).Status, "the drafter sees it")
	mine := b.Do(t, colleague, "GET", "/replay/requests?status=draft", nil, nil).Doc(t)
	assert.Equal(t, 1, row(mine, draft.ID).Length(), "the drafter lists their draft")
}

// TestApprovalCountIsTheSameEverywhere approves a manual request (two
// approvers) once: the flash, the request page's count and its note, the
// replays page and the approvals page all say "1 of 2", for the approver
// and for the second approver, and no banner says otherwise. The
// navigation counts requests waiting for the viewer's approval.
func TestApprovalCountIsTheSameEverywhere(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	_, requester := b.SignIn(t, "acme:oncall")
	first, _ := b.SignIn(t, "acme:approver")
	second, _ := b.SignIn(t, "acme:approver")
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{seed(t, b, "acme", "ledger.delete", "led-1", nil)}, replay.SubmitInput{})
	require.Equal(t, 2, req.ApprovalsNeeded)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	d := b.Do(t, first, "GET", path, nil, nil).Doc(t)
	assert.Equal(t, "1", textOf(d, `[data-testid="nav-approvals-count"]`), "one request waits for this approver")
	assert.Equal(t, "0 of 2", textOf(d, `[data-testid="replay-approval-count"]`))
	phrase, err := b.Replays.ConfirmationFor(ctx, req.ID)
	require.NoError(t, err)
	resp := b.Do(t, first, "POST", path+"/approve", url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}, "confirmation": {phrase}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	after := b.Do(t, first, "GET", path, nil, nil).Doc(t)
	assert.Contains(t, textOf(after, `[data-testid="flash"]`), "1 of 2")
	assert.Zero(t, after.Find(`[data-testid="nav-approvals-count"]`).Length(), "nothing more waits for the first approver")
	for who, c := range map[string]*http.Client{"first": first, "second": second} {
		d := b.Do(t, c, "GET", path, nil, nil).Doc(t)
		assert.Equal(t, "1 of 2", textOf(d, `[data-testid="replay-approval-count"]`), who)
		assert.Contains(t, textOf(d, `[data-testid="replay-decision"]`), "1 of 2", who)
		assert.NotContains(t, d.Text(), "0 of 2", "%s: no stale count anywhere on the page", who)
		list := b.Do(t, c, "GET", "/replay/requests", nil, nil).Doc(t)
		assert.Equal(t, "1 of 2", strings.TrimSpace(row(list, req.ID).Find(`[data-testid="replay-row-approvals"]`).Text()), who)
		approvals := b.Do(t, c, "GET", "/approvals", nil, nil).Doc(t)
		assert.Equal(t, "1 of 2", textOf(approvals, `[data-testid="approval-count"]`), who)
	}
	d = b.Do(t, second, "GET", path, nil, nil).Doc(t)
	assert.Equal(t, "1", textOf(d, `[data-testid="nav-approvals-count"]`), "it still waits for the second")
	assert.Equal(t, 1, d.Find(`[data-testid="approve"]`).Length())
}

// TestFinishedRequestOffersNoCancel runs a direct request to its end: its
// page offers no cancel, a cancel posted from an old page answers 409 with
// the request's page (its own address, the message at the top) and no
// confirmation page; a rejected request says who rejected it and why.
func TestFinishedRequestOffersNoCancel(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, me := b.SignIn(t, "acme:oncall")
	approver, boss := b.SignIn(t, "acme:approver")
	_, err := b.JetStream.CreateStream(ctx, jetstreamConfig("APP", "app.>"))
	require.NoError(t, err)
	done := testfactory.Request(t, b.Replays, me.Actor, []int64{seed(t, b, "acme", "search.index_update", "doc-9", nil)}, replay.SubmitInput{})
	path := fmt.Sprintf("/replay/requests/%d", done.ID)
	assert.Equal(t, 1, b.Do(t, oncall, "GET", path, nil, nil).Doc(t).Find(`[data-testid="cancel"]`).Length(), "cancel while it may run")
	runWorker(t, b)
	wait.Until(t, "the request ends", 30*time.Second, func() bool {
		r, err := b.Replays.Request(ctx, done.ID)
		return err == nil && !r.Status.Open()
	})

	d := b.Do(t, oncall, "GET", path, nil, nil).Doc(t)
	assert.Equal(t, "done", d.Find(`[data-testid="replay-status"]`).AttrOr("data-status", ""))
	assert.Zero(t, d.Find(`[data-testid="cancel"]`).Length(), "no cancel on a finished request")
	_, polls := d.Find(`[data-testid="replay-progress"]`).Attr("hx-get")
	assert.False(t, polls, "no polling once it ended")
	assert.Equal(t, 1, d.Find(`[data-testid="progress-segment"]`).Length(), "the bar: all replayed")

	resp := b.Do(t, oncall, "POST", path+"/cancel", url.Values{}, nil)
	assert.Equal(t, http.StatusConflict, resp.Status)
	page := resp.Doc(t)
	assert.Equal(t, path, page.Find("body").AttrOr("data-canonical", ""), "the address bar shows the request, not /cancel")
	assert.Contains(t, textOf(page, `[data-testid="flash"]`), "nothing left to cancel")
	assert.Zero(t, page.Find(`[data-testid="confirm-form"]`).Length(), "no confirmation of what cannot happen")
	assert.Equal(t, "done", page.Find(`[data-testid="replay-status"]`).AttrOr("data-status", ""))

	// The poll of a page that showed it running reloads the whole page.
	poll := b.Do(t, oncall, "GET", path+"/progress?seen=running", nil, nil)
	assert.Equal(t, "true", poll.Header.Get("HX-Refresh"))
	poll = b.Do(t, oncall, "GET", path+"/progress?seen=done", nil, nil)
	assert.Empty(t, poll.Header.Get("HX-Refresh"))

	mail := testfactory.Request(t, b.Replays, me.Actor, []int64{seed(t, b, "acme", "email.send", "mail-r",
		map[string][]string{dlq.HeaderOperationID: {"op-r"}})}, replay.SubmitInput{})
	require.NoError(t, b.Replays.Reject(ctx, mail.ID, boss.Actor, replay.RejectInput{IntentHex: mail.IntentHex(), Version: mail.Version, Reason: "wrong template"}, quarantine.RequestMeta{}))
	rejected := b.Do(t, oncall, "GET", fmt.Sprintf("/replay/requests/%d", mail.ID), nil, nil).Doc(t)
	assert.Contains(t, textOf(rejected, `[data-testid="replay-closed-by"]`), boss.Email)
	assert.Contains(t, textOf(rejected, `[data-testid="replay-status-reason"]`), "wrong template")
	assert.Zero(t, rejected.Find(`[data-testid="cancel"]`).Length())
	list := b.Do(t, approver, "GET", "/replay/requests?status=rejected", nil, nil).Doc(t)
	assert.Contains(t, row(list, mail.ID).Find(`[data-testid="replay-row-closed-by"]`).Text(), boss.Email)
	resp = b.Do(t, approver, "POST", fmt.Sprintf("/replay/requests/%d/reject", mail.ID), url.Values{"reason": {"again"}}, nil)
	assert.Equal(t, http.StatusConflict, resp.Status, "rejecting a rejected request")
}

// TestApproverSeesEveryEdit: the approver reads the payloads and the diff
// of each edit on the request page (a duplicate key as text, not a map
// that hides it); a request with more edits than the page shows cannot be
// approved (the page says why, and a crafted approve is refused).
func TestApproverSeesEveryEdit(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	_, me := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")

	// A direct class runs at once: edit a draft before it is submitted.
	batch, drafts := testfactory.Draft(t, b.Replays, me.Actor, seed(t, b, "acme", "search.index_update", "doc-dup", nil))
	require.NoError(t, b.Replays.EditPayload(ctx, drafts[0].ID, firstItem(t, b, drafts[0].ID), me.Actor,
		replay.PayloadEdit{Payload: []byte(`{"x":500,"x":1}`), Reason: "x was wrong"}, quarantine.RequestMeta{}))
	reqs, err := b.Replays.Submit(ctx, batch, me.Actor, replay.SubmitInput{Reason: "fixed"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	path := fmt.Sprintf("/replay/requests/%d", reqs[0].ID)
	d := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	diff := d.Find(`[data-testid="payload-diff"]`)
	require.Equal(t, 1, diff.Length())
	assert.Contains(t, diff.Find(`[data-testid="payload-diff-lines"]`).Text(), `+ {"x":500,"x":1}`, "the duplicate key shows as typed")
	assert.Contains(t, diff.Find(`[data-testid="payload-diff-lines"]`).Text(), `- {"x":1}`)
	body := textOf(d, `[data-testid="replay-payload-body"]`)
	assert.Contains(t, body, `"x": 500`, "the payload as it will be sent, both keys")
	assert.Contains(t, body, `"x": 1`)
	assert.Equal(t, 1, d.Find(`[data-testid="approve"]`).Length())
	dl := firstItem(t, b, reqs[0].ID)
	edited := b.Do(t, approver, "GET", fmt.Sprintf("%s/items/%d/payload", path, dl), nil, nil)
	assert.Equal(t, http.StatusOK, edited.Status)
	assert.Equal(t, `{"x":500,"x":1}`, edited.Body, "the edited payload downloads")

	// More edits than the page shows: nobody approves what they could not read.
	var ids []int64
	for i := range 21 {
		ids = append(ids, seed(t, b, "acme", "search.index_update", fmt.Sprintf("doc-many-%d", i), nil))
	}
	batch, drafts = testfactory.Draft(t, b.Replays, me.Actor, ids...)
	for _, id := range ids {
		require.NoError(t, b.Replays.EditPayload(ctx, drafts[0].ID, id, me.Actor,
			replay.PayloadEdit{Payload: []byte(`{"x":2}`), Reason: "x must be 2"}, quarantine.RequestMeta{}))
	}
	reqs, err = b.Replays.Submit(ctx, batch, me.Actor, replay.SubmitInput{Reason: "fixed"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	many := fmt.Sprintf("/replay/requests/%d", reqs[0].ID)
	d = b.Do(t, approver, "GET", many, nil, nil).Doc(t)
	assert.Zero(t, d.Find(`[data-testid="approve"]`).Length(), "no approve button")
	assert.Contains(t, textOf(d, `[data-testid="approve-refused"]`), "21 payloads")
	resp := b.Do(t, approver, "POST", many+"/approve", url.Values{"intent": {reqs[0].IntentHex()}, "version": {strconv.Itoa(reqs[0].Version)}}, nil)
	assert.Equal(t, http.StatusConflict, resp.Status, "a crafted approve is refused")
	var approvals int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_approvals WHERE request_id = $1`, reqs[0].ID).Scan(&approvals))
	assert.Zero(t, approvals)
}

// firstItem is the dead letter of the first item of request id.
func firstItem(t *testing.T, b *testfactory.Console, id int64) int64 {
	t.Helper()
	items, err := b.Replays.Items(context.Background(), id, 1)
	require.NoError(t, err)
	require.NotEmpty(t, items)
	return items[0].DeadLetterID
}

// listedIDs are the request ids of the replays page d, in order.
func listedIDs(d *goquery.Document) []int64 {
	var out []int64
	d.Find(`[data-testid="replay-row"]`).Each(func(_ int, s *goquery.Selection) {
		var id int64
		fmt.Sscan(s.AttrOr("data-id", ""), &id)
		out = append(out, id)
	})
	return out
}

// TestReplaysPageFiltersAndCounts filters the replays page by requester
// (the start of the email, any case; the requester's name links there)
// and by submitted time (the dead-letter list's presets and relative
// ranges, kept in the URL), counts what the filter selects by status and
// by item outcome (only in the viewer's tenants), and re-renders bad
// values with the message at their field (422).
func TestReplaysPageFiltersAndCounts(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, me := b.SignIn(t, "acme:oncall")
	_, other := b.SignIn(t, "acme:oncall")
	_, outsider := b.SignIn(t, "globex:oncall")
	mail := testfactory.Request(t, b.Replays, me.Actor, []int64{seed(t, b, "acme", "email.send", "mail-f",
		map[string][]string{dlq.HeaderOperationID: {"op-f"}})}, replay.SubmitInput{})
	index := testfactory.Request(t, b.Replays, other.Actor, []int64{seed(t, b, "acme", "search.index_update", "doc-f", nil)}, replay.SubmitInput{})
	testfactory.Request(t, b.Replays, outsider.Actor, []int64{seed(t, b, "globex", "search.index_update", "doc-gf", nil)}, replay.SubmitInput{})
	_, err := b.Pool.Exec(ctx, `UPDATE replay_requests SET submitted_at = now() - interval '3 days' WHERE id = $1`, index.ID)
	require.NoError(t, err)

	get := func(query string) *goquery.Document {
		t.Helper()
		resp := b.Do(t, oncall, "GET", "/replay/requests?"+query, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, query)
		return resp.Doc(t)
	}
	d := get("")
	assert.Equal(t, "2 requests", textOf(d, `[data-testid="replays-count"]`), "acme's, not globex's")
	counts := map[string]string{}
	d.Find(`[data-testid="replay-count-status"]`).Each(func(_ int, s *goquery.Selection) {
		counts[s.AttrOr("data-status", "")] = s.AttrOr("data-n", "")
	})
	assert.Equal(t, map[string]string{"pending_approval": "1", "approved": "1"}, counts)
	pending := d.Find(`[data-testid="replay-count-status"][data-status="pending_approval"]`).AttrOr("href", "")
	assert.Equal(t, []int64{mail.ID}, listedIDs(get(strings.TrimPrefix(pending, "/replay/requests?"))), "a status count lists them")
	assert.Equal(t, "2", d.Find(`[data-testid="replay-count-outcome"][data-outcome="pending"]`).AttrOr("data-n", ""),
		"to go: the approved request's item and the one waiting for approval (replay.ItemCounts)")
	assert.NotContains(t, textOf(d, `[data-testid="replay-counts"]`), "pending_approval", "labels, not enum names")

	upper := strings.ToUpper(other.Email[:strings.Index(other.Email, "@")+1])
	assert.Equal(t, []int64{index.ID}, listedIDs(get("requester="+url.QueryEscape(upper))), "the start of the email, any case")
	link := row(d, index.ID).Find(`[data-testid="replay-row-requester"] a`).AttrOr("href", "")
	assert.Equal(t, []int64{index.ID}, listedIDs(get(strings.TrimPrefix(link, "/replay/requests?"))), "the requester's name lists their requests")

	assert.Equal(t, []int64{mail.ID}, listedIDs(get("from=now-24h")), "submitted in the last day")
	assert.Equal(t, []int64{index.ID}, listedIDs(get("to=now-24h")), "submitted before")
	day := get("from=now-24h")
	preset := day.Find(`[data-testid="time-preset"][aria-current="true"]`)
	assert.Equal(t, "24 h", strings.TrimSpace(preset.Text()), "the dead-letter list's presets")
	assert.Equal(t, "1 request", textOf(day, `[data-testid="replays-count"]`), "the counts follow the filter")

	for query, field := range map[string]string{
		"requester=" + url.QueryEscape("a b"): "requester",
		"from=yesterday":                      "from",
		"from=now-1h&to=now-2h":               "to",
		"order=sideways":                      "order",
		"order=newest&before=m5":              "page",
	} {
		resp := b.Do(t, oncall, "GET", "/replay/requests?"+query, nil, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, query)
		assert.Equal(t, 1, resp.Doc(t).Find(`[data-testid="field-error-`+field+`"]`).Length(), "%s: the message at %s", query, field)
	}

	// A request that ended before it ran says so of its items.
	_, approver := b.SignIn(t, "acme:approver")
	require.NoError(t, b.Replays.Reject(ctx, mail.ID, approver.Actor, replay.RejectInput{IntentHex: mail.IntentHex(), Version: mail.Version, Reason: "wrong template"}, quarantine.RequestMeta{}))
	page := b.Do(t, oncall, "GET", fmt.Sprintf("/replay/requests/%d", mail.ID), nil, nil).Doc(t)
	assert.Equal(t, "the request was rejected", textOf(page, `[data-testid="replay-item-not-run"]`))
	assert.NotContains(t, textOf(page, `[data-testid="replay-item-verdict"]`), "goes")
}
