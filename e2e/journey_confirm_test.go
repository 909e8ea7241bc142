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

// publishRefunds dead-letters n refunds of acme (a run's own message ids)
// and returns their ids, in order.
func publishRefunds(t *testing.T, s *stack, run string, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	_, js := connectNATS(t, s.NATSURL, "e2e-refunds-"+run)
	specs := make([]deadLetterSpec, n)
	for i := range specs {
		specs[i] = deadLetterSpec{Tenant: "acme", ItemType: "orders.refund", OriginalSubject: "app.acme.orders.refund",
			MsgID: fmt.Sprintf("refund-%s-%d", run, i), Payload: fmt.Appendf(nil, `{"order":"ord-%d"}`, i),
			Err: "payments: card declined twice", Class: dlq.ClassPermanent}
		publishDeadLetter(t, ctx, js, specs[i])
	}
	ids := make([]int64, n)
	for i, d := range specs {
		ids[i] = waitDeadLetterID(t, s.DB, d.MsgID, s.Console.proc)
	}
	return ids
}

// deadLetterStatus is the status a dead letter has in the database.
func deadLetterStatus(t *testing.T, s *stack, id int64) string {
	t.Helper()
	var st string
	require.NoError(t, s.DB.QueryRow(context.Background(), `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&st))
	return st
}

// TestDiscardAsksConfirmation: an on-call discards from a dead letter's
// page. With JavaScript a dialog asks first: dismissing it changes nothing
// (no status change, no audit row); accepting it discards, with the
// reason in the audit log. Without JavaScript the same button leads to a
// confirmation page that lists the dead letter and keeps the reason;
// nothing changes until its button is pressed, and "Back" leads back.
// Resolving asks the same way.
func TestDiscardAsksConfirmation(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{})
	run := randomHex(4)
	ids := publishRefunds(t, s, run, 3)
	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	discards := func() int {
		var n int
		require.NoError(t, s.DB.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = 'deadletter.discard' AND outcome = 'ok'`).Scan(&n))
		return n
	}

	// With JavaScript: a dialog.
	oncall.openDeadLetter(ids[0])
	oncall.Fill(testID("close-reason"), "duplicate of a refund already made by hand")
	q := oncall.ClickAnswering(testID("discard"), false)
	assert.Contains(t, q, "Discard this dead letter?")
	assert.Equal(t, "quarantined", deadLetterStatus(t, s, ids[0]), "dismissed: nothing happened")
	assert.Zero(t, discards(), "dismissed: nothing audited")
	assert.True(t, oncall.Exists(testID("discard")), "still on the dead letter's page")
	oncall.MarkPage()
	oncall.ClickAnswering(testID("discard"), true)
	oncall.WaitNewPage("the dead letter's page with the result", `document.querySelector('[data-testid="flash"]')`)
	assert.Equal(t, "1 dead letter discarded.", oncall.Text(testID("flash")))
	assert.Equal(t, "discarded", deadLetterStatus(t, s, ids[0]))
	var reason string
	require.NoError(t, s.DB.QueryRow(context.Background(), `SELECT reason FROM audit_log WHERE action = 'deadletter.discard' AND object_id = $1`,
		strconv.FormatInt(ids[0], 10)).Scan(&reason))
	assert.Equal(t, "duplicate of a refund already made by hand", reason)

	oncall.openDeadLetter(ids[1])
	oncall.Fill(testID("close-reason"), "fixed in the ledger")
	assert.Contains(t, oncall.ClickAnswering(testID("resolve"), false), "resolved by hand")
	assert.Equal(t, "quarantined", deadLetterStatus(t, s, ids[1]), "resolve asks too")

	// Without JavaScript: a page of its own.
	oncall.ScriptOff(true)
	oncall.openDeadLetter(ids[1])
	oncall.Fill(testID("close-reason"), "duplicate, found without scripts")
	oncall.ClickLoads(testID("discard"), "the confirmation page", `document.querySelector('[data-testid="confirm-form"]')`)
	assert.Equal(t, "Discard 1 dead letter?", oncall.Text(testID("confirm-title")))
	assert.Equal(t, "duplicate, found without scripts", eval[string](oncall, "read the reason", `document.querySelector('[data-testid="confirm-reason"]').value`))
	assert.Contains(t, oncall.Text(testID("confirm-items")), fmt.Sprintf("refund-%s-1", run))
	assert.Equal(t, "quarantined", deadLetterStatus(t, s, ids[1]), "nothing before the confirmation")
	oncall.Screenshots("confirm")
	oncall.ClickLoads(testID("confirm-back"), "back on the dead letter", `location.pathname === "/deadletters/`+strconv.FormatInt(ids[1], 10)+`" &&
		document.querySelector('[data-testid="close-reason"]')`)
	assert.Equal(t, "quarantined", deadLetterStatus(t, s, ids[1]), "going back changes nothing")

	oncall.Fill(testID("close-reason"), "duplicate, found without scripts")
	oncall.ClickLoads(testID("discard"), "the confirmation page", `document.querySelector('[data-testid="confirm-form"]')`)
	oncall.ClickLoads(testID("confirm-submit"), "the dead letter after the discard", `location.pathname === "/deadletters/`+strconv.FormatInt(ids[1], 10)+`" &&
		document.querySelector('[data-testid="flash"]')`)
	assert.Equal(t, "discarded", deadLetterStatus(t, s, ids[1]))
	assert.Equal(t, 2, discards())

	// A form posted without the confirmation (a script, an old page) is
	// asked too.
	oncall.ScriptOff(false)
	oncall.Open("/deadletters")
	res := oncall.Fetch(http.MethodPost, fmt.Sprintf("/deadletters/%d/discard", ids[2]), url.Values{"reason": {"x"}})
	assert.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `data-testid="confirm-form"`)
	assert.Equal(t, "quarantined", deadLetterStatus(t, s, ids[2]))
	oncall.openDeadLetter(ids[0])
	oncall.Screenshots("")
}

// TestBulkSelectionKeptOnError: the on-call ticks rows on the list (select
// all, then one less: the toolbar counts them), and presses Discard
// without a reason: the message is at the reason field, nothing was sent,
// and every tick is still there. With a reason the dialog names how many,
// and exactly those are discarded. "Replay…" with nothing ticked cannot be
// pressed; posted anyway, it goes back to the list with a message, and a
// discard posted without a reason answers the confirmation page with the
// message at the field and the selection in it.
func TestBulkSelectionKeptOnError(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{})
	run := randomHex(4)
	ids := publishRefunds(t, s, run, 5)
	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.Open("/deadletters?tenant=acme")
	oncall.WaitUntil("the list with its selection toolbar", `document.querySelectorAll('[data-testid="deadletter-row"]').length === 5 &&
		!document.querySelector('[data-testid="bulk-selected"]').hidden`)
	assert.Equal(t, "None selected", oncall.Text(testID("bulk-selected")))
	assert.True(t, eval[bool](oncall, "replay disabled", `document.querySelector('[data-testid="bulk-replay"]').disabled`), "nothing to replay yet")
	assert.True(t, eval[bool](oncall, "discard disabled", `document.querySelector('[data-testid="bulk-discard"]').disabled`))

	oncall.Click(testID("select-all"))
	oncall.WaitUntil("all five selected", `document.querySelector('[data-testid="bulk-selected"]').textContent.trim() === "5 selected"`)
	keep := ids[2]
	oncall.Click(fmt.Sprintf(`[data-testid="deadletter-row"][data-id="%d"] [data-testid="row-select"]`, keep))
	oncall.WaitUntil("four selected", `document.querySelector('[data-testid="bulk-selected"]').textContent.trim() === "4 selected"`)
	ticked := func() []string {
		return eval[[]string](oncall, "read the ticks", `[...document.querySelectorAll('[data-testid="row-select"]:checked')].map(b => b.value).sort()`)
	}
	before := ticked()
	require.Len(t, before, 4)

	// No reason: the message at the field, nothing sent, the ticks kept.
	eval[bool](oncall, "mark the page", `(window.__stay = true)`)
	oncall.Click(testID("bulk-discard"))
	oncall.WaitUntil("the reason's message", `document.querySelector('[data-testid="field-error-bulk-reason"]') &&
		!document.querySelector('[data-testid="field-error-bulk-reason"]').hidden`)
	assert.Contains(t, oncall.Text(testID("field-error-bulk-reason")), "Say why")
	assert.True(t, eval[bool](oncall, "same page", `window.__stay === true`), "nothing was sent")
	assert.Equal(t, before, ticked(), "every tick is kept")
	assert.Equal(t, "4 selected", oncall.Text(testID("bulk-selected")))
	for _, id := range ids {
		assert.Equal(t, "quarantined", deadLetterStatus(t, s, id))
	}
	oncall.Screenshots("reason")

	// With a reason: asked, then exactly the four.
	oncall.Fill(testID("bulk-reason"), "refunds made by hand in the payments console")
	oncall.MarkPage()
	q := oncall.ClickAnswering(testID("bulk-discard"), true)
	assert.Contains(t, q, "the 4 selected dead letters")
	oncall.WaitNewPage("the list after the discard", `document.querySelector('[data-testid="flash"]')`)
	assert.Equal(t, "4 dead letters discarded.", oncall.Text(testID("flash")))
	for _, id := range ids {
		want := "discarded"
		if id == keep {
			want = "quarantined"
		}
		assert.Equal(t, want, deadLetterStatus(t, s, id), "dead letter %d", id)
	}

	// Posted past the page's checks: no dead end, and the selection kept.
	res := oncall.Fetch(http.MethodPost, "/replay", url.Values{"return_to": {"/deadletters?tenant=acme"}})
	assert.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, s.Console.URL+"/deadletters?tenant=acme", res.URL, "back to the list")
	assert.Contains(t, res.Body, "Tick the dead letters to replay first")
	res = oncall.Fetch(http.MethodPost, "/deadletters/discard", url.Values{"id": {strconv.FormatInt(keep, 10)}, "confirmed": {"1"},
		"return_to": {"/deadletters?tenant=acme"}})
	assert.Equal(t, http.StatusUnprocessableEntity, res.Status)
	assert.Contains(t, res.Body, `data-testid="field-error-reason"`)
	assert.Contains(t, res.Body, `name="id" value="`+strconv.FormatInt(keep, 10)+`"`, "the selection is in the form")
	assert.Equal(t, "quarantined", deadLetterStatus(t, s, keep))
}
