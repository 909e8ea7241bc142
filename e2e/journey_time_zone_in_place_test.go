package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestTimeZoneSavedInPlaceKeepsTheTypedReason: an on-call's replay submit
// comes back refused (a wrong confirmation): the confirm page a POST
// rendered. They type a new reason, then open the menu under their name
// and save "my browser's zone". The page stays as it is, with the reason
// they typed; the menu says the setting was saved and the page is in the
// browser's zone from then on. (The form used to go to a GET page, and
// the confirm page and the reason were gone.)
func TestTimeZoneSavedInPlaceKeepsTheTypedReason(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{})
	run := randomHex(4)
	_, js := connectNATS(t, s.NATSURL, "e2e-tz-"+run)
	refund := deadLetterSpec{Tenant: "acme", ItemType: "orders.refund", OriginalSubject: "app.acme.orders.refund",
		MsgID: "refund-" + run, Payload: []byte(`{"order":"ord-1"}`), Err: "payments: gateway timeout", Class: dlq.ClassTransient}
	publishDeadLetter(t, context.Background(), js, refund)
	ids := []int64{waitDeadLetterID(t, s.DB, refund.MsgID, s.Console.proc)}

	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.openDeadLetter(ids[0])
	oncall.ClickLoads(testID("replay"), "the replay confirm page", `document.querySelector('[data-testid="replay-confirm-form"]')`)
	oncall.Fill(`input[name^="confirm-"]`, "REPLAY something-else")
	oncall.Fill(testID("replay-reason"), "first try (e2e "+run+")")
	oncall.ClickLoads(testID("replay-submit"), "the confirm page with the refusal", `document.querySelector('[data-testid="replay-confirm-form"]') &&
		document.querySelector('[data-testid^="field-error-confirm-"], [data-testid="replay-group-error"]')`)
	refused := oncall.Location()

	reason := "payments gateway back, checked the ledger (e2e " + run + ")"
	oncall.Fill(testID("replay-reason"), reason)
	oncall.MarkPage()
	oncall.Click(testID("user-menu") + " summary")
	oncall.Click(testID("time-zone-local"))
	oncall.Click(testID("time-zone-save"))
	oncall.WaitUntil("the setting saved in place", `document.documentElement.dataset.timeZone === "local" &&
		document.querySelector('[data-testid="time-zone-saved"]').textContent.includes("browser")`)

	assert.True(t, eval[bool](oncall, "still the same page", `window.__e2eLeft === true`), "the page was left")
	assert.Equal(t, refused, oncall.Location())
	assert.Equal(t, reason, eval[string](oncall, "the reason typed", `document.querySelector('[data-testid="replay-reason"]').value`))
	assert.True(t, strings.Contains(oncall.Text(testID("time-zone-saved")), "your browser's zone"), oncall.Text(testID("time-zone-saved")))
}
