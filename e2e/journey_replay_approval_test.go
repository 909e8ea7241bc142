package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestApprovalAndAuditReplayJourney is journey 2 of issue 6 followed by
// the replay part of journey 4, on the replay journey 2 made.
//
// Journey 2: the on-call requests the replay of a same_operation email
// (with its operation id) with a reason; their own request page offers no
// approve button, and a crafted approve POST with their session, from the
// page and over plain HTTP, is refused with 403 and publishes nothing. The
// approver signs in in a separate browser context, finds the request in
// /approvals, sees the intent (requester, reason, intent hash, the item's
// subject and payload hash, the same hash the dead letter shows) and
// approves it; the replay runs and the target stream holds the message
// once. A second approve POST answers 409 and changes nothing.
//
// Journey 4: the auditor finds the replay by message id in /audit, with
// the requester, the approver, the reason, the payload hash (in the after
// JSON of an item event) and the published result; exports the filtered
// log as CSV; has no replay or approve controls on the dead letter and
// request pages, and their POSTs to /replay and the approve route are
// refused with 403. `console audit verify` passes.
func TestApprovalAndAuditReplayJourney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, js := newReplayStack(t, stackConfig{})
	run := randomHex(4)
	email := deadLetterSpec{
		Tenant: "acme", ItemType: "email.send", OriginalSubject: "app.acme.email.send",
		MsgID: "mail-" + run, OperationID: "op-mail-" + run,
		Payload: fmt.Appendf(nil, `{"to":"customer@example.com","template":"order_shipped","order":"o-%s"}`, run),
		Err:     "smtp: 421 service not available", Class: dlq.ClassTransient, Stack: "mailer.Send\n\t/srv/mailer/send.go:12",
	}
	publishDeadLetter(t, ctx, js, email)
	dlID := waitDeadLetterID(t, s.DB, email.MsgID, s.Console.proc)

	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.openDeadLetter(dlID)
	assert.Equal(t, "same_operation", oncall.Text(testID("dl-policy-class")))
	payloadSHA := oncall.Text(testID("dl-sha"))
	require.Regexp(t, `^[0-9a-f]{64}$`, payloadSHA)
	reason := "SMTP relay was down 10:02-10:40; resend the shipping email (e2e " + run + ")"
	reqID := oncall.requestReplay(reason, "")
	assert.Equal(t, "pending_approval", oncall.Attr(testID("replay-status"), "data-status"))
	assert.False(t, oncall.Exists(testID("approve")), "the requester is offered no approve button")
	assert.False(t, oncall.Exists(testID("approve-form")), "the requester is offered no approve form")
	intent := oncall.intentHash()

	// The requester crafts the approval: from their page, and over HTTP
	// with a session of their own made through Dex.
	approve := url.Values{"intent": {intent}}
	res := oncall.Fetch(http.MethodPost, requestPath(reqID)+"/approve", approve)
	assert.Equal(t, http.StatusForbidden, res.Status, "the requester approving from the page: %.300s", res.Body)
	oncallHTTP := signInHTTP(t, s.Console.URL, userOncall)
	status, body, err := oncallHTTP.PostForm(ctx, requestPath(reqID)+"/approve", approve)
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, status, "the requester approving over HTTP: %.300s", body)
	oncall.Open(requestPath(reqID))
	assert.Equal(t, "pending_approval", oncall.Attr(testID("replay-status"), "data-status"), "a refused approval changes nothing")
	requireStreamEmpty(t, ctx, js)

	// The approver, in a browser context of their own.
	approver := b.newSession(t, s.Console.URL, "approver")
	approver.LoginAs(userApprover)
	approver.Open("/approvals")
	approver.WaitUntil("the approval queue", `document.querySelector('[data-testid="approval-row"]')`)
	row := fmt.Sprintf(`[...document.querySelectorAll('[data-testid="approval-row"]')].find(r => r.querySelector('a.row-link').textContent.trim() === "#%d")`, reqID)
	require.True(t, eval[bool](approver, "find the request in the queue", `!!`+row), "request %d in /approvals", reqID)
	rowText := eval[string](approver, "read the queue row", row+`.textContent`)
	assert.Contains(t, rowText, userOncall)
	assert.Contains(t, rowText, reason)
	approver.MarkPage()
	eval[bool](approver, "open the request", `(`+row+`.querySelector('a.row-link').click(), true)`)
	approver.WaitNewPage("the request page", `location.pathname === `+jsString(requestPath(reqID))+` && document.querySelector('[data-testid="replay-intent"]')`)
	intentText := approver.Text(testID("replay-intent"))
	assert.Contains(t, intentText, userOncall, "the intent names the requester")
	assert.Contains(t, intentText, reason, "the intent shows the reason")
	assert.Equal(t, intent, approver.intentHash(), "the approver sees the intent the requester made")
	assert.Equal(t, intent, approver.Attr(testID("approve-form")+` input[name="intent"]`, "value"), "the form approves that intent")
	items := approver.Text(testID("replay-items"))
	assert.Contains(t, items, email.OriginalSubject, "the intent shows the target subject")
	assert.Contains(t, items, email.OperationID, "the intent shows the operation id")
	assert.Equal(t, payloadSHA, approver.Attr(testID("replay-items")+" "+testID("replay-item-sha"), "data-sha"), "the payload hash of the dead letter")
	approver.Screenshot("approver-before")
	approver.approveReplay(reqID, "")
	approver.waitReplayStatus(reqID, "done")
	assert.Contains(t, approver.Text(testID("replay-approvals")), userApprover)
	assert.False(t, approver.Exists(testID("approve")), "nothing left to approve")
	requireReplayedOnce(t, ctx, js, email.MsgID, email.OriginalSubject, email.Payload, reqID)

	// A second approval of the same intent changes nothing.
	approvals := auditCount(t, s.DB, "replay.approve", "ok")
	res = approver.Fetch(http.MethodPost, requestPath(reqID)+"/approve", approve)
	assert.Equal(t, http.StatusConflict, res.Status, "a second approve: %.300s", res.Body)
	approver.Open(requestPath(reqID))
	assert.Equal(t, "done", approver.Attr(testID("replay-status"), "data-status"))
	assert.Equal(t, approvals, auditCount(t, s.DB, "replay.approve", "ok"), "no second approval recorded")
	requireReplayedOnce(t, ctx, js, email.MsgID, email.OriginalSubject, email.Payload, reqID)
	approver.Screenshot("approver")

	// Journey 4, the replay part: the auditor.
	auditor := b.newSession(t, s.Console.URL, "auditor")
	auditor.LoginAs(userAuditor)
	auditor.Open("/audit?" + url.Values{"message_id": {email.MsgID}}.Encode())
	auditor.WaitUntil("the message's audit events", `document.querySelector('[data-testid="audit-table"]')`)
	events := auditEvents(auditor)
	byAction := map[string][]auditEventRow{}
	for _, e := range events {
		assert.Equal(t, email.MsgID, e.Message, "the filter shows this message's events only: %+v", e)
		byAction[e.Action] = append(byAction[e.Action], e)
	}
	for _, a := range []string{"replay.item.requested", "replay.item.approved", "replay.item.replayed"} {
		require.Lenf(t, byAction[a], 1, "one %s event for the message in %+v", a, events)
	}
	assert.Equal(t, userOncall, byAction["replay.item.requested"][0].Actor, "the requester")
	assert.Contains(t, byAction["replay.item.requested"][0].Reason, reason, "the request's reason, on the same page")
	assert.Equal(t, userApprover, byAction["replay.item.approved"][0].Actor, "the approver")
	published := byAction["replay.item.replayed"][0]
	assert.Contains(t, published.Reason, "published to "+email.OriginalSubject)
	assert.Contains(t, published.Reason, targetStream+":", "the published result names the stream and sequence")
	assert.Equal(t, "ok", published.Outcome)

	// One item event in full: its after JSON holds the payload hash.
	auditor.Open("/audit/" + byAction["replay.item.requested"][0].Seq)
	auditor.WaitUntil("the audit event page", `document.querySelector('[data-testid="audit-event-chain"]')`)
	assert.Equal(t, "replay.item.requested", auditor.Text(testID("audit-event-action")))
	assert.Contains(t, auditor.Text(testID("audit-event-actor")), userOncall)
	after := auditor.Text(testID("audit-after"))
	var afterJSON map[string]any
	require.NoError(t, json.Unmarshal([]byte(after), &afterJSON), "the after JSON: %s", after)
	assert.Equal(t, payloadSHA, afterJSON["payload_sha256"], "the payload hash in the after JSON: %s", after)
	assert.Equal(t, email.OriginalSubject, afterJSON["subject"], "the target subject in the after JSON: %s", after)

	// The request's own events: the reason, and the approval.
	auditor.Open("/audit?" + url.Values{"object": {strconv.FormatInt(reqID, 10)}}.Encode())
	auditor.WaitUntil("the request's audit events", `document.querySelector('[data-testid="audit-table"]')`)
	reqEvents := auditEvents(auditor)
	var sawRequest, sawApprove bool
	for _, e := range reqEvents {
		switch e.Action {
		case "replay.request":
			sawRequest = true
			assert.Equal(t, userOncall, e.Actor)
			assert.Contains(t, e.Reason, reason, "the request event carries the reason")
		case "replay.approve":
			sawApprove = true
			assert.Equal(t, userApprover, e.Actor)
		}
	}
	assert.Truef(t, sawRequest, "a replay.request event in %+v", reqEvents)
	assert.Truef(t, sawApprove, "a replay.approve event in %+v", reqEvents)

	// The export of the message's events, with the auditor's session.
	auditor.Open("/audit?" + url.Values{"message_id": {email.MsgID}}.Encode())
	auditor.WaitUntil("the message's audit events", `document.querySelector('[data-testid="export-csv"]')`)
	href := auditor.Attr(testID("export-csv"), "href")
	require.Contains(t, href, "message_id=", "the export link carries the filter")
	res = auditor.Fetch(http.MethodGet, href, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	r := csv.NewReader(strings.NewReader(res.Body))
	r.FieldsPerRecord = -1
	records, err := r.ReadAll()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(records), 3, res.Body)
	assert.Equal(t, auditExportColumns, records[0])
	col := func(rec []string, name string) string { return rec[indexOf(auditExportColumns, name)] }
	var csvActions []string
	for _, rec := range records[1 : len(records)-1] {
		if col(rec, "action") == "" {
			continue // a stub: an entry the filter leaves out, seq and hashes only
		}
		assert.Equal(t, email.MsgID, col(rec, "message_id"))
		csvActions = append(csvActions, col(rec, "action"))
		if col(rec, "action") == "replay.item.replayed" {
			assert.Contains(t, col(rec, "reason"), "published to "+email.OriginalSubject)
		}
		if col(rec, "action") == "replay.item.approved" {
			assert.Equal(t, userApprover, col(rec, "actor_email"))
		}
	}
	assert.Subset(t, csvActions, []string{"replay.item.requested", "replay.item.approved", "replay.item.replayed"})
	assert.Equal(t, "# chain-head", records[len(records)-1][0])

	// No controls for the auditor, and their POSTs are refused.
	auditor.openDeadLetter(dlID)
	assert.False(t, auditor.Exists(testID("replay")), "the auditor has no replay button")
	assert.False(t, auditor.Exists(testID("replay-form")), "the auditor has no replay form")
	assert.False(t, auditor.Exists(testID("discard-form")), "the auditor has no discard form")
	auditor.Open(requestPath(reqID))
	auditor.WaitUntil("the request page", `document.querySelector('[data-testid="replay-intent"]')`)
	for _, id := range []string{"approve", "approve-form", "reject-form", "cancel-form"} {
		assert.Falsef(t, auditor.Exists(testID(id)), "the auditor has no %s", id)
	}
	res = auditor.Fetch(http.MethodPost, "/replay", url.Values{"id": {strconv.FormatInt(dlID, 10)}})
	assert.Equal(t, http.StatusForbidden, res.Status, "the auditor's POST /replay: %.300s", res.Body)
	res = auditor.Fetch(http.MethodPost, requestPath(reqID)+"/approve", approve)
	assert.Equal(t, http.StatusForbidden, res.Status, "the auditor's approve: %.300s", res.Body)
	auditor.Open("/audit?" + url.Values{"message_id": {email.MsgID}}.Encode())
	auditor.WaitUntil("the message's audit events", `document.querySelector('[data-testid="audit-table"]')`)
	auditor.Screenshot("")
	requireReplayedOnce(t, ctx, js, email.MsgID, email.OriginalSubject, email.Payload, reqID)
	s.Console.AuditVerify(t)
}

// auditEventRow is one row of the audit table with its message and reason.
type auditEventRow struct {
	Seq     string `json:"seq"`
	Actor   string `json:"actor"`
	Action  string `json:"action"`
	Outcome string `json:"outcome"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
}

func auditEvents(s *session) []auditEventRow {
	s.t.Helper()
	return eval[[]auditEventRow](s, "read the audit table", `[...document.querySelectorAll('[data-testid="audit-row"]')].map(r => {
		const cell = l => r.querySelector('td[data-label="' + l + '"]');
		const text = l => (cell(l) || {textContent: ""}).textContent.trim();
		const message = r.querySelector('td[data-label="Message"] [data-testid="audit-message"]'); // the cell also shows the operation id
		return {seq: r.dataset.seq, actor: text("Actor"), action: text("Action"), outcome: text("Outcome"),
			message: message ? message.textContent.trim() : "", reason: (cell("Reason") && cell("Reason").getAttribute("title")) || text("Reason")};
	})`)
}
