package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestRev44CancelledRequestIsRequestedAgain: an on-call requests four
// email.send dead letters (one approver needed), then cancels the request
// while it waits; a fifth dead letter of the kind arrives. The request's
// page offers "Request the 4 not replayed again", and it leads to a confirm
// page of those four, not the new arrival.
func TestRev44CancelledRequestIsRequestedAgain(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{})
	ctx := context.Background()
	_, js := connectNATS(t, s.NATSURL, "e2e-again")
	run := randomHex(4)
	letter := func(i int) int64 {
		d := deadLetterSpec{Tenant: "acme", ItemType: "email.send", OriginalSubject: "app.acme.email.send",
			MsgID: fmt.Sprintf("again-%s-%d", run, i), OperationID: fmt.Sprintf("op-%s-%d", run, i),
			Payload: fmt.Appendf(nil, `{"to":"user-%d@example.com"}`, i), Err: "smtp: 451 try again later", Class: dlq.ClassTransient}
		publishDeadLetter(t, ctx, js, d)
		return waitDeadLetterID(t, s.DB, d.MsgID, s.Console.proc)
	}
	for i := range 4 {
		letter(i)
	}
	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.Open("/deadletters?tenant=acme&type=email.send")
	oncall.WaitUntil("the four, selectable", `document.querySelectorAll('[data-testid="deadletter-row"]').length === 4 &&
		!document.querySelector('[data-testid="select-all"]').hidden`)
	oncall.Click(testID("select-all"))
	oncall.ClickLoads(testID("bulk-replay"), "the replay confirm page", `document.querySelector('[data-testid="replay-confirm-form"]')`)
	oncall.Fill(testID("replay-reason"), "mail relay is back")
	oncall.ClickLoads(testID("replay-submit"), "the replay request page", replayRequestPage)
	m := replayRequestPath.FindStringSubmatch(oncall.Location())
	if m == nil {
		t.Fatalf("not on a replay request page: %s", oncall.Location())
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	assert.Equal(t, "pending_approval", oncall.Attr(testID("replay-status"), "data-status"))
	assert.False(t, oncall.Exists(testID("request-again")), "nothing to request again while it waits")

	oncall.MarkPage()
	oncall.ClickAnswering(testID("cancel"), true)
	oncall.WaitNewPage("the cancelled request", `document.querySelector('[data-testid="replay-status"]').dataset.status === "cancelled"`)
	letter(4) // arrives after the cancel
	oncall.Open("/replay/requests/" + strconv.FormatInt(id, 10))
	oncall.WaitUntil("the offer", `document.querySelector('[data-testid="request-again"]')`)
	assert.Equal(t, "Request the 4 not replayed again", oncall.Text(testID("request-again-submit")))
	oncall.Screenshot("offer")

	oncall.ClickLoads(testID("request-again-submit"), "the confirm page of the new draft", `document.querySelector('[data-testid="replay-confirm-form"]')`)
	assert.Len(t, oncall.Texts(testID("replay-item")), 4, "the four it did not replay, not the new arrival")
	oncall.Screenshot("confirm")
}
