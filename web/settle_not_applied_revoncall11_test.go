package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall11NotAppliedIsNotShownCancelled: an approver settles an item
// that needs reconciliation "Not applied, leave it" (they checked the
// target: the effect is missing). The flash says "Recorded as not applied:
// the dead letter is back in quarantine." — and the request page then
// shows the item as a grey "cancelled" badge, its Outcome as "done with
// problems: … 1 cancelled" with a grey bar segment, beside "Cancel
// replay", a different action by a different person. The dead letter is
// unresolved again and needs someone to act; nothing on the request page
// says so. Seen: /tmp/rc11/req4-settled.png (screens server, request 4
// after settling its first item "not applied").
//
// Severity: low–medium (the one item of the request that still needs
// work reads as the one someone chose to drop). Expected: the item reads
// as what happened — not applied, back in quarantine (amber), linked to
// its dead letter — not "cancelled".
func TestRevOncall11NotAppliedIsNotShownCancelled(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "search.index_update", "rvo11-not-applied", nil)
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "shard back"})
	testfactory.NeedsPerson(t, b.Pool, req.ID)

	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	resp := b.Do(t, approver, "POST", fmt.Sprintf("%s/items/%d/reconcile", path, id),
		url.Values{"choice": {"not_applied"}, "note": {"checked the index: the document is missing"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	dl := b.Do(t, approver, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil).Doc(t)
	require.Equal(t, "quarantined", strings.TrimSpace(dl.Find(`[data-testid="dl-status"]`).Text()), "the dead letter is back in quarantine")

	page := b.Do(t, approver, "GET", path, nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	d := page.Doc(t)
	outcome := strings.Join(strings.Fields(d.Find(`[data-testid="replay-item-outcome"]`).First().Text()), " ")
	assert.NotEqual(t, "cancelled", outcome,
		"settled 'not applied' (back in quarantine), the item reads %q; the outcome: %q", outcome,
		strings.Join(strings.Fields(d.Find(`[data-testid="progress-summary"]`).Text()), " "))
}
