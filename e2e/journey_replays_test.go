package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
)

// replayRow is the CSS of request id's row on the replays page.
func replayRow(id int64) string {
	return `[data-testid="replay-row"][data-id="` + strconv.FormatInt(id, 10) + `"]`
}

// TestReplaysPageJourney is the replays page of issue 13: the on-call
// replays a search index update (it runs at once) and requests the replay
// of an email (it waits for an approver), then finds both from the
// navigation's Replays page with their status, items, submitted time and
// approvals so far, their own first, and the counts by status and item
// outcome; filters by requester (the start of an email, any case) and
// submitted time (a preset, then a range that holds nothing, then a bad
// value: the message at its field), by status, opens the finished one (a progress
// bar, no cancel, no polling) and the waiting one. While its page is open
// an approver rejects the email: the on-call's Cancel then answers on the
// request's own page (its address, the message, "Rejected by" the
// approver with the reason), never on /…/cancel.
func TestReplaysPageJourney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, js := newReplayStack(t, stackConfig{})
	run := randomHex(4)
	index := deadLetterSpec{Tenant: "acme", ItemType: "search.index_update", OriginalSubject: "app.acme.search.index_update",
		MsgID: "doc-" + run, Payload: fmt.Appendf(nil, `{"doc":"d-%s"}`, run), Err: "elastic: 503", Class: dlq.ClassTransient}
	email := deadLetterSpec{Tenant: "acme", ItemType: "email.send", OriginalSubject: "app.acme.email.send",
		MsgID: "mail-" + run, OperationID: "op-mail-" + run, Payload: fmt.Appendf(nil, `{"to":"c@example.com","order":"o-%s"}`, run),
		Err: "smtp: 421", Class: dlq.ClassTransient}
	publishDeadLetter(t, ctx, js, index)
	publishDeadLetter(t, ctx, js, email)
	indexDL := waitDeadLetterID(t, s.DB, index.MsgID, s.Console.proc)
	emailDL := waitDeadLetterID(t, s.DB, email.MsgID, s.Console.proc)

	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.openDeadLetter(indexDL)
	done := oncall.requestReplay("reindex after the elastic outage (e2e "+run+")", "")
	oncall.waitReplayStatus(done, "done")
	oncall.openDeadLetter(emailDL)
	waiting := oncall.requestReplay("resend the shipping email (e2e "+run+")", "")

	// From the navigation to the list.
	oncall.ClickLoads(testID("nav-replays"), "the replays page", `location.pathname === "/replay/requests" && document.querySelector('[data-testid="replays-table"]')`)
	assert.Equal(t, "done", oncall.Attr(replayRow(done), "data-status"))
	assert.Equal(t, "1 replayed", oncall.Text(replayRow(done)+" "+testID("replay-row-items")))
	assert.Equal(t, "not needed", oncall.Text(replayRow(done)+" "+testID("replay-row-approvals")))
	assert.Equal(t, "pending_approval", oncall.Attr(replayRow(waiting), "data-status"))
	assert.Equal(t, "0 of 1", oncall.Text(replayRow(waiting)+" "+testID("replay-row-approvals")))
	assert.Equal(t, "0 replayed · 1 to go", oncall.Text(replayRow(waiting)+" "+testID("replay-row-items")))
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT`, oncall.Attr(replayRow(waiting)+" "+testID("replay-row-submitted")+" time", "datetime"))
	assert.Contains(t, oncall.Text(replayRow(waiting)), "(you)")
	// Counts by outcome over what the filter selects: requests by status,
	// items by outcome.
	countOf := func(kind, value string) string {
		return oncall.Attr(`[data-testid="replay-count-`+kind+`"][data-`+kind+`="`+value+`"]`, "data-n")
	}
	assert.Equal(t, "1", countOf("status", "done"))
	assert.Equal(t, "1", countOf("status", "pending_approval"))
	assert.Equal(t, "1", countOf("outcome", "replayed"), "the finished request's item")
	assert.Equal(t, "2 requests", oncall.Text(testID("replays-count")))
	assert.Equal(t, strconv.FormatInt(waiting, 10), oncall.Attr(`[data-testid="replay-row"]`, "data-id"), "the on-call's own, newest first")
	oncall.Screenshots("list")

	// By requester: the start of an email, in any case; no one else's.
	oncall.Fill(`input[name="requester"]`, "APPROVER@")
	oncall.ClickLoads(testID("replay-filter")+` button[type="submit"]`, "the list of the approver's requests", `location.search.includes("requester=APPROVER") &&
		document.querySelector('[data-testid="replays-count"]')`)
	assert.Equal(t, "0 requests", oncall.Text(testID("replays-count")))
	assert.False(t, oncall.Exists(`[data-testid="replay-row"]`))
	oncall.Fill(`input[name="requester"]`, "OnCall@")
	oncall.ClickLoads(testID("replay-filter")+` button[type="submit"]`, "the list of the on-call's requests", `location.search.includes("requester=OnCall") &&
		document.querySelectorAll('[data-testid="replay-row"]').length === 2`)

	// By time: the presets of the dead-letter list, relative in the URL.
	oncall.Open("/replay/requests")
	// The first preset is the shortest: 15 m.
	oncall.ClickLoads(`[data-testid="time-preset"]`, "the last 15 minutes", `location.search.includes("from=now-15m") &&
		document.querySelectorAll('[data-testid="replay-row"]').length === 2`)
	oncall.Fill(`input[name="from"]`, "now-7d")
	oncall.Fill(`input[name="to"]`, "now-15m")
	oncall.ClickLoads(testID("replay-filter")+` button[type="submit"]`, "nothing from a week ago until 15 minutes ago", `location.search.includes("to=now-15m") &&
		document.querySelector('[data-testid="replays-count"]')`)
	assert.Equal(t, "0 requests", oncall.Text(testID("replays-count")))
	oncall.Fill(`input[name="to"]`, "yesterday")
	oncall.ClickLoads(testID("replay-filter")+` button[type="submit"]`, "the message at the field", `location.search.includes("to=yesterday") &&
		document.querySelector('[data-testid="field-error-to"]')`)
	assert.Equal(t, "now-7d", oncall.Attr(`input[name="from"]`, "value"), "the rest of the filter kept")
	oncall.Screenshots("bad-time")

	oncall.Open("/replay/requests")
	oncall.Select(`select[name="status"]`, "pending_approval")
	oncall.ClickLoads(testID("replay-filter")+` button[type="submit"]`, "the filtered list", `location.search.includes("status=pending_approval") &&
		document.querySelector('[data-testid="replays-table"]')`)
	assert.Equal(t, []string{strconv.FormatInt(waiting, 10)},
		eval[[]string](oncall, "the rows", `[...document.querySelectorAll('[data-testid="replay-row"]')].map(r => r.dataset.id)`))

	// The finished request: a bar, no cancel, no polling.
	oncall.Open("/replay/requests")
	oncall.ClickLoads(replayRow(done)+" a.row-link", "the finished request", `location.pathname === `+jsString(requestPath(done))+` &&
		document.querySelector('[data-testid="replay-progress"]')`)
	assert.True(t, oncall.Exists(testID("progress-bar")), "a progress bar")
	assert.False(t, oncall.Exists(testID("cancel")), "no cancel on a finished request")
	assert.Empty(t, oncall.Attr(testID("replay-progress"), "hx-get"), "no polling once it ended")
	assert.NotEmpty(t, oncall.Text(testID("replay-submitted")))
	oncall.Screenshots("done")

	// The waiting request is rejected while its page is open; Cancel then
	// stays on the request's page and says why.
	oncall.Open(requestPath(waiting))
	require.True(t, oncall.Exists(testID("cancel")))
	assert.NotEmpty(t, oncall.Attr(testID("replay-progress"), "hx-get"), "it polls while it waits")
	// A tab whose poll did not run (a laptop asleep): without its progress
	// block htmx stops polling, and the page stays as it was.
	eval[bool](oncall, "stop the poll", `(document.getElementById("replay-progress").remove(), true)`)
	approver := b.newSession(t, s.Console.URL, "approver")
	approver.LoginAs(userApprover)
	approver.Open(requestPath(waiting))
	approver.Fill(testID("reject-form")+` input[name="reason"]`, "wrong template (e2e "+run+")")
	approver.MarkPage()
	approver.ClickAnswering(testID("reject"), true)
	approver.WaitNewPage("the rejected request", `document.querySelector('[data-testid="replay-status"]') &&
		document.querySelector('[data-testid="replay-status"]').dataset.status === "rejected"`)

	oncall.MarkPage()
	oncall.ClickAnswering(testID("cancel"), true)
	oncall.WaitNewPage("the answer to cancel", `document.querySelector('[data-testid="replay-status"]')`)
	assert.Equal(t, requestPath(waiting), eval[string](oncall, "the address", `location.pathname`), "on the request's page, not /cancel")
	assert.Equal(t, "rejected", oncall.Attr(testID("replay-status"), "data-status"))
	assert.Contains(t, oncall.Text(testID("flash")), "nothing left to cancel")
	assert.Contains(t, oncall.Text(testID("replay-closed-by")), userApprover)
	assert.Contains(t, oncall.Text(testID("replay-status-reason")), "wrong template")
	assert.False(t, oncall.Exists(testID("cancel")))
	assert.Equal(t, "the request was rejected", oncall.Text(testID("replay-item-not-run")), "its item is not said to go")
	oncall.Screenshots("rejected")

	oncall.Open("/replay/requests?status=rejected")
	assert.Contains(t, oncall.Text(replayRow(waiting)+" "+testID("replay-row-closed-by")), userApprover)
}

// TestApproverQueueJourney is the approver's queue of issue 13: a refund
// (manual: two approvers) waits; the navigation counts it for each
// approver, the approvals page shows its age and "0 of 2", the request
// page shows the payload as it will be sent; after the first approval both
// approvers see "1 of 2" in the same places (count, note, queue, replays
// page), the first no longer counts it, the second approves and it runs.
func TestApproverQueueJourney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, js := newReplayStack(t, stackConfig{})
	run := randomHex(4)
	refund := deadLetterSpec{Tenant: "acme", ItemType: "orders.refund", OriginalSubject: "app.acme.orders.refund",
		MsgID: "refund-" + run, OperationID: "op-refund-" + run,
		Payload: fmt.Appendf(nil, `{"order":"o-%s","amount_cents":4999}`, run), Err: "payments: 502", Class: dlq.ClassTransient}
	publishDeadLetter(t, ctx, js, refund)
	dlID := waitDeadLetterID(t, s.DB, refund.MsgID, s.Console.proc)
	phrase := "REPLAY " + refund.MsgID

	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.openDeadLetter(dlID)
	reqID := oncall.requestReplay("refund lost in the outage (e2e "+run+")", phrase)
	assert.False(t, oncall.Exists(testID("nav-approvals-count")), "the requester is not counted as an approver")

	approver := b.newSession(t, s.Console.URL, "approver")
	approver.LoginAs(userApprover)
	approver.Open("/approvals")
	assert.Equal(t, "1", approver.Text(testID("nav-approvals-count")))
	row := `[data-testid="approval-row"]`
	require.True(t, approver.Exists(row))
	assert.Equal(t, "0 of 2", approver.Text(row+" "+testID("approval-count")))
	assert.Regexp(t, `just submitted|waiting \d+[sm]`, approver.Text(row+" "+testID("approval-age")), "its age")
	approver.Screenshots("queue")
	approver.Open("/deadletters")
	approver.WaitUntil("the dead letters", `document.querySelector('[data-testid="deadletter-table"]')`)
	assert.False(t, approver.Exists(testID("row-select")), "an approver, who cannot act on dead letters, gets no checkboxes")
	approver.Open("/approvals")
	approver.ClickLoads(row+" a.row-link", "the request page", `location.pathname === `+jsString(requestPath(reqID))+` &&
		document.querySelector('[data-testid="replay-progress"]')`)
	assert.Contains(t, approver.Text(testID("replay-payload-body")), "o-"+run, "the payload as it will be sent")
	assert.Equal(t, "0 of 2", approver.Text(testID("replay-approval-count")))
	approver.approveReplay(reqID, phrase)
	assert.Contains(t, approver.Text(testID("flash")), "1 of 2")
	assert.False(t, approver.Exists(testID("nav-approvals-count")), "nothing waits for the first approver now")

	approver2 := b.newSession(t, s.Console.URL, "approver2")
	approver2.LoginAs(userApprover2)
	approver2.Open(requestPath(reqID))
	assert.Equal(t, "1", approver2.Text(testID("nav-approvals-count")))
	for _, who := range []*session{approver, approver2} {
		who.Open(requestPath(reqID))
		assert.Equal(t, "1 of 2", who.Text(testID("replay-approval-count")), who.label)
		assert.Contains(t, who.Text(testID("replay-decision")), "1 of 2", who.label)
		assert.NotContains(t, who.Text("main"), "0 of 2", "%s: no other count on the page", who.label)
		who.Open("/approvals")
		assert.Equal(t, "1 of 2", who.Text(`[data-testid="approval-row"] `+testID("approval-count")), who.label)
		who.Open("/replay/requests")
		assert.Equal(t, "1 of 2", who.Text(replayRow(reqID)+" "+testID("replay-row-approvals")), who.label)
	}
	approver2.Open(requestPath(reqID))
	approver2.Screenshots("second-approver")
	approver2.approveReplay(reqID, phrase)
	approver2.waitReplayStatus(reqID, "done")
	assert.Equal(t, "2 of 2", approver2.Text(testID("replay-approval-count")))
	requireReplayedOnce(t, ctx, js, refund.MsgID, refund.OriginalSubject, refund.Payload, reqID)
}
