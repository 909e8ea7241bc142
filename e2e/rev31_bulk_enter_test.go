package e2e

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevOncall31EnterInTheBulkReasonStartsNothing: on the list, the
// on-call ticks rows and types a reason to discard them, then presses
// Enter in the field. HTML presses a form's first submit button on Enter,
// and the selection form's first was "Replay…" (no dialog): a replay
// draft of the ticked rows, audited, with the discard's reason carried
// into it, one click from publishing. Enter now does nothing: the page
// stays, Discard… then asks and discards, and no replay was drafted.
func TestRevOncall31EnterInTheBulkReasonStartsNothing(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{})
	run := randomHex(4)
	ids := publishRefunds(t, s, run, 3)
	b := newBrowser(t)
	oncall := b.newSession(t, s.Console.URL, "oncall")
	oncall.LoginAs(userOncall)
	oncall.Open("/deadletters?tenant=acme")
	oncall.WaitUntil("the list with its selection toolbar", `document.querySelectorAll('[data-testid="deadletter-row"]').length === 3 &&
		!document.querySelector('[data-testid="bulk-selected"]').hidden`)
	oncall.Click(testID("select-all"))
	oncall.WaitUntil("all three selected", `document.querySelector('[data-testid="bulk-selected"]').textContent.trim() === "3 selected"`)
	oncall.Fill(testID("bulk-reason"), "duplicates of INC-42")
	eval[bool](oncall, "mark the page", `(window.__stay = true)`)
	oncall.do("press Enter in the reason", chromedp.SendKeys(chromedp.CSS(testID("bulk-reason")), kb.Enter))

	assert.True(t, eval[bool](oncall, "the same page", `window.__stay === true`), "Enter left the page as it was")
	// Then Discard…: it can be pressed only on the list page Enter left
	// alone, and it discards the three.
	oncall.MarkPage()
	q := oncall.ClickAnswering(testID("bulk-discard"), true)
	assert.Contains(t, q, "the 3 selected dead letters")
	oncall.WaitNewPage("the list after the discard", `document.querySelector('[data-testid="flash"]')`)
	assert.Equal(t, "3 dead letters discarded.", oncall.Text(testID("flash")))
	for _, id := range ids {
		assert.Equal(t, "discarded", deadLetterStatus(t, s, id))
	}
	var drafts int
	require.NoError(t, s.DB.QueryRow(context.Background(),
		`SELECT count(*) FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id WHERE d.msg_id LIKE 'refund-' || $1 || '-%'`, run).Scan(&drafts))
	assert.Zero(t, drafts, "Enter drafted no replay")
}
