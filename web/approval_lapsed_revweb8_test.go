package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb8ExpiredApprovalIsNotShownAsCounting: a manual request needs
// two approvers, and an approval counts for approval_expiry (4h in the
// shipped policy). The request page lists each approval and marks one
// that stopped counting "(no longer counts)" — but requestModel decides
// that by the intent and voided_at only, never by the expiry the rules
// apply (CountOf / validApprovals). So once the first approver's approval
// has expired, the page's count says "0 of 2" while the list shows that
// approver's approval as if it counted: the second approver, reading the
// list, believes one more click publishes a destructive item, and the
// first is not told they must approve again.
//
// Severity: medium. Expected: an approval past its class's expiry is shown
// "(no longer counts)", as a voided one is.
func TestRevWeb8ExpiredApprovalIsNotShownAsCounting(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	_, first := b.SignIn(t, "acme:approver")
	second, _ := b.SignIn(t, "acme:approver")

	id := seed(t, b, "acme", "vault.destroy", "rw8-lapsed", nil) // no rule: manual
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{})
	require.Equal(t, "manual", string(req.Class))
	phrase, err := b.Replays.ConfirmationFor(t.Context(), req.ID)
	require.NoError(t, err)
	_, err = b.Replays.Approve(t.Context(), req.ID, first.Actor, replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: phrase}, quarantine.RequestMeta{})
	require.NoError(t, err)

	// Five hours later (the class's approvals expire after four).
	_, err = b.DB.OwnerPool.Exec(t.Context(), `UPDATE replay_approvals SET approved_at = approved_at - interval '5 hours' WHERE request_id = $1`, req.ID)
	require.NoError(t, err)

	page := b.Do(t, second, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	d := page.Doc(t)
	var rows []string
	d.Find(`[data-testid="replay-approvals"] li`).Each(func(_ int, li *goquery.Selection) {
		rows = append(rows, strings.Join(strings.Fields(li.Text()), " "))
	})
	require.Len(t, rows, 1, "the first approval is listed")
	require.Contains(t, page.Body, "0 of 2", "the rules count no approval: the first expired")
	assert.Contains(t, rows[0], "no longer counts", "the expired approval is shown as counting: %q", rows[0])
}
