package e2e

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestRequestPageKeepsWhatIsTypedWhenItChanges: a request's page reloads
// itself when the request changes (its progress poll answers HX-Refresh),
// unless the person is typing in one of its forms: then the page stays as
// it is, what they typed with it, and a notice offers the reload.
//
// A manual refund waits for two approvers. Approver two has its page open
// with nothing typed; approver one approves, and approver two's page
// reloads by itself (the approval shows). Approver two then types a
// reason to reject; the requester cancels the request meanwhile. The page
// does not reload: the reason is still in its field, and the notice "This
// request changed — reload to see it" is shown; its Reload button shows
// the request cancelled.
func TestRequestPageKeepsWhatIsTypedWhenItChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, js := newReplayStack(t, stackConfig{})
	run := randomHex(4)
	refund := deadLetterSpec{
		Tenant: "acme", ItemType: "orders.refund", OriginalSubject: "app.acme.orders.refund",
		MsgID: "refund-typed-" + run, OperationID: "op-refund-typed-" + run,
		Payload: fmt.Appendf(nil, `{"order":"o-%s","amount_cents":1299,"currency":"EUR"}`, run),
		Err:     "payments: gateway refused the connection", Class: dlq.ClassTransient,
	}
	publishDeadLetter(t, ctx, js, refund)
	dlID := waitDeadLetterID(t, s.DB, refund.MsgID, s.Console.proc)
	phrase := "REPLAY " + refund.MsgID

	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.openDeadLetter(dlID)
	reqID := oncall.requestReplay("refund lost while the gateway was down (e2e "+run+")", phrase)
	require.Equal(t, "pending_approval", oncall.Attr(testID("replay-status"), "data-status"))

	// Nothing typed: the page follows the request by itself.
	approver2 := b.newSession(t, s.Console.URL, "approver2")
	approver2.LoginAs(userApprover2)
	approver2.Open(requestPath(reqID))
	approver2.WaitUntil("the reject form", `document.querySelector('#f-reject-reason')`)
	approver2.MarkPage()
	approver := b.newSession(t, s.Console.URL, "approver")
	approver.LoginAs(userApprover)
	approver.approveReplay(reqID, phrase)
	approver2.WaitNewPage("the page reloaded by itself with the first approval",
		`document.querySelector('[data-testid="replay-approvals"]') && document.querySelector('[data-testid="replay-approvals"]').textContent.includes(`+jsString(userApprover)+`)`)
	assert.True(t, approver2.Exists(`[data-page-changed][hidden]`), "a reload with nothing typed shows no notice")

	// Typing a reason to reject: the change does not wipe it.
	approver2.MarkPage()
	reason := "the customer was refunded by hand in the gateway (e2e " + run + ")"
	approver2.Fill("#f-reject-reason", reason)
	// The requester's own request page follows the request too, and
	// reloads itself with the approval: a fetch evaluated in it while it
	// does fails ("Inspected target navigated"). It cancels from the dead
	// letter's page, which follows nothing.
	oncall.openDeadLetter(dlID)
	res := oncall.Fetch("POST", requestPath(reqID)+"/cancel", url.Values{"confirmed": {"1"}, "reason": {"not needed after all"}})
	require.Less(t, res.Status, 400, "the requester cancels: %.300s", res.Body)
	var status string
	require.NoError(t, s.DB.QueryRow(ctx, `SELECT status FROM replay_requests WHERE id = $1`, reqID).Scan(&status))
	require.Equal(t, "cancelled", status)

	approver2.WaitUntil("the notice that the request changed", `document.querySelector('[data-page-changed]:not([hidden])')`)
	assert.True(t, eval[bool](approver2, "the page was not reloaded", `window.__e2eLeft === true`), "the page stayed")
	assert.Equal(t, reason, eval[string](approver2, "read the reject reason", `document.querySelector('#f-reject-reason').value`), "what was typed is kept")
	assert.Contains(t, approver2.Text(`[data-page-changed]`), "This request changed — reload to see it")
	assert.Equal(t, "pending_approval", approver2.Attr(testID("replay-status"), "data-status"), "the page still shows the request as it was")
	approver2.Screenshot("changed-notice")

	approver2.ClickLoads(testID("page-reload"), "the request page reloaded", `document.querySelector('[data-testid="replay-status"]')`)
	assert.Equal(t, "cancelled", approver2.Attr(testID("replay-status"), "data-status"), "the reload shows the request as it is")
	assert.False(t, approver2.Exists(`[data-page-changed]:not([hidden])`), "and no notice")
}
