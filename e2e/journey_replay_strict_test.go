package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestStrictReplayJourney is journey 3 of issue 6: a refund (manual class)
// needs the typed confirmation "REPLAY <message id>" on the confirm page
// (a wrong one is refused there), then two distinct approvers, neither the
// requester, each typing it too. After the first approval the request is
// still pending_approval and nothing is published; the first approver
// cannot approve a second time; the second approver, in a browser context
// of their own, approves and the replay runs: the target stream holds the
// refund once, under its original Nats-Msg-Id.
func TestStrictReplayJourney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, js := newReplayStack(t, stackConfig{})
	run := randomHex(4)
	refund := deadLetterSpec{
		Tenant: "acme", ItemType: "orders.refund", OriginalSubject: "app.acme.orders.refund",
		MsgID: "refund-" + run, OperationID: "op-refund-" + run,
		Payload: fmt.Appendf(nil, `{"order":"o-%s","amount_cents":4999,"currency":"EUR"}`, run),
		Err:     "payments: gateway timeout, outcome unknown", Class: dlq.ClassUnknownEffect,
		Stack: "payments.Refund\n\t/srv/payments/refund.go:40",
	}
	publishDeadLetter(t, ctx, js, refund)
	dlID := waitDeadLetterID(t, s.DB, refund.MsgID, s.Console.proc)
	phrase := "REPLAY " + refund.MsgID

	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.openDeadLetter(dlID)
	assert.Equal(t, "manual", oncall.Text(testID("dl-policy-class")))

	// The confirm page refuses a wrong confirmation and keeps the draft.
	oncall.ClickLoads(testID("replay"), "the replay confirm page", `document.querySelector('[data-testid="replay-confirm-form"]')`)
	assert.Contains(t, oncall.Text(testID("replay-confirm-form")), phrase, "the page says what to type")
	oncall.Fill(`input[name^="confirm-"]`, "REPLAY something-else")
	oncall.Fill(testID("replay-reason"), "refund lost in the gateway outage (e2e "+run+")")
	oncall.ClickLoads(testID("replay-submit"), "the confirm page with the refusal", `document.querySelector('[data-testid="replay-confirm-form"]') &&
		document.querySelector('[data-testid^="field-error-confirm-"], [data-testid="replay-group-error"]')`)
	var drafts int
	require.NoError(t, s.DB.QueryRow(ctx, `SELECT count(*) FROM replay_requests WHERE status <> 'draft'`).Scan(&drafts))
	assert.Zero(t, drafts, "a wrong confirmation submits nothing")

	// Typed right, with what was checked (its error class says the effect
	// is unknown), the request waits for two approvers.
	note := "the gateway's ledger has no refund " + refund.OperationID + " (checked by hand, e2e " + run + ")"
	oncall.Fill(`input[name^="confirm-"]`, phrase)
	oncall.Fill(testID("replay-reason"), "refund lost in the gateway outage (e2e "+run+")")
	oncall.Fill(testID("replay-reconciliation-note"), note)
	oncall.ClickLoads(testID("replay-submit"), "the replay request page", replayRequestPage)
	m := replayRequestPath.FindStringSubmatch(oncall.Location())
	require.NotNil(t, m, oncall.Location())
	var reqID int64
	_, err := fmt.Sscan(m[1], &reqID)
	require.NoError(t, err)
	assert.Equal(t, "pending_approval", oncall.Attr(testID("replay-status"), "data-status"))
	assert.False(t, oncall.Exists(testID("approve")), "the requester is offered no approve button")

	// Approver one: typed confirmation, one approval; not enough.
	approver := b.newSession(t, s.Console.URL, "approver")
	approver.LoginAs(userApprover)
	approver.Open(requestPath(reqID))
	approver.WaitUntil("the approve form", `document.querySelector('[data-testid="approve-form"] input[name="confirmation"]')`)
	intent := approver.intentHash()
	assert.Contains(t, approver.Text(testID("replay-intent")), note, "the approver reads what was checked")
	approver.approveReplay(reqID, phrase)
	approver.Open(requestPath(reqID))
	assert.Equal(t, "pending_approval", approver.Attr(testID("replay-status"), "data-status"), "one approval is not enough")
	assert.Contains(t, approver.Text(testID("replay-approvals")), userApprover)
	assert.False(t, approver.Exists(testID("approve")), "approver one has nothing left to approve")
	var version int
	require.NoError(t, s.DB.QueryRow(ctx, `SELECT version FROM replay_requests WHERE id = $1`, reqID).Scan(&version))
	res := approver.Fetch(http.MethodPost, requestPath(reqID)+"/approve", url.Values{"intent": {intent}, "version": {strconv.Itoa(version)}, "confirmation": {phrase}})
	assert.Equal(t, http.StatusConflict, res.Status, "approver one approving again: %.300s", res.Body)
	assert.Contains(t, res.Body, "already approved", "refused as a second approval, not for the version")
	approver.Open(requestPath(reqID))
	assert.Equal(t, "pending_approval", approver.Attr(testID("replay-status"), "data-status"), "the same approver twice is still one approval")
	requireStreamEmpty(t, ctx, js)
	var jobs int
	require.NoError(t, s.DB.QueryRow(ctx, `SELECT count(*) FROM replay_jobs`).Scan(&jobs))
	assert.Zero(t, jobs, "no job before the second approval")

	// Approver two, in a browser context of their own: a wrong phrase is
	// refused, the right one makes it run.
	approver2 := b.newSession(t, s.Console.URL, "approver2")
	approver2.LoginAs(userApprover2)
	approver2.Open(requestPath(reqID))
	approver2.WaitUntil("the approve form", `document.querySelector('[data-testid="approve-form"] input[name="confirmation"]')`)
	assert.Equal(t, intent, approver2.intentHash(), "both approve the same intent")
	approver2.Fill(`input[name="confirmation"]`, "REPLAY "+run)
	approver2.ClickLoads(testID("approve"), "the refused approval", `document.querySelector('[data-testid="field-error-confirmation"], [data-testid="field-error-approve"]')`)
	approver2.Open(requestPath(reqID))
	assert.Equal(t, "pending_approval", approver2.Attr(testID("replay-status"), "data-status"), "a wrong phrase approves nothing")
	requireStreamEmpty(t, ctx, js)
	approver2.approveReplay(reqID, phrase)
	approver2.waitReplayStatus(reqID, "done")
	approvals := approver2.Text(testID("replay-approvals"))
	assert.Contains(t, approvals, userApprover)
	assert.Contains(t, approvals, userApprover2)
	approver2.Screenshot("")
	requireReplayedOnce(t, ctx, js, refund.MsgID, refund.OriginalSubject, refund.Payload, reqID)
	s.Console.AuditVerify(t)
}
