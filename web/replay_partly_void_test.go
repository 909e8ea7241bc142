package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestPartlyVoidSelectionIsSubmittedWithANeutralFlash: an on-call selects
// an email (same_operation, one approver) and two refunds (manual allows
// no bulk: void) and submits. The part that can be replayed is requested,
// as before; the flash was red, as if it all failed. It is neutral (not
// the green of "all of it goes on") and says how many requests and dead
// letters were left out, and why.
func TestPartlyVoidSelectionIsSubmittedWithANeutralFlash(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	mail := seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))
	r1 := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	r2 := seed(t, b, "acme", "orders.refund", "refund-2", nil)
	confirm := draftPage(t, b, oncall, mail, r1, r2)
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	require.Equal(t, 1, d.Find(`[data-testid="replay-submit"]`).Length(), "part of it can be requested")

	resp := b.Do(t, oncall, "POST", confirm, pageForm(d, url.Values{"reason": {"mail relay back"}}), nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	page := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	flash := page.Find(`[data-testid="flash"]`)
	require.Equal(t, 1, flash.Length(), page.Text())
	assert.Equal(t, "info", flash.AttrOr("data-kind", ""), "the flash of a partly void submit: %q", flash.Text())
	text := strings.Join(strings.Fields(flash.Text()), " ")
	assert.Contains(t, text, "Replay requested for 1 of the 2 requests")
	assert.Contains(t, text, "Left out: 1 void request of 2 dead letters")

	drafts, err := b.Replays.Batch(context.Background(), strings.TrimPrefix(confirm, "/replay/batches/"))
	require.NoError(t, err)
	statuses := map[replay.Status]int{}
	for _, r := range drafts {
		statuses[r.Status]++
	}
	assert.Equal(t, map[replay.Status]int{replay.StatusPendingApproval: 1, replay.StatusVoid: 1}, statuses)
}
