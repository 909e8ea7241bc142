package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestApprovalsPageMarksWhatYouApproved: once the first of a manual
// request's two approvers signs off, their approvals page says of it "you
// approved; waiting for another approver"; the second approver's says
// nothing of the kind.
func TestApprovalsPageMarksWhatYouApproved(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, requester := b.SignIn(t, "acme:oncall")
	first, _ := b.SignIn(t, "acme:approver")
	second, _ := b.SignIn(t, "acme:approver")
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{seed(t, b, "acme", "ledger.delete", "led-1", nil)}, replay.SubmitInput{})
	require.Equal(t, 2, req.ApprovalsNeeded)
	phrase, err := b.Replays.ConfirmationFor(context.Background(), req.ID)
	require.NoError(t, err)
	resp := b.Do(t, first, "POST", fmt.Sprintf("/replay/requests/%d/approve", req.ID), url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}, "confirmation": {phrase}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	mine := b.Do(t, first, "GET", "/approvals", nil, nil).Doc(t)
	assert.Equal(t, "you approved; waiting for another approver", textOf(mine, `[data-testid="approval-row"] [data-testid="approval-yours"]`))
	assert.Equal(t, "1 of 2", textOf(mine, `[data-testid="approval-count"]`))
	theirs := b.Do(t, second, "GET", "/approvals", nil, nil).Doc(t)
	assert.Equal(t, 1, theirs.Find(`[data-testid="approval-row"]`).Length())
	assert.Zero(t, theirs.Find(`[data-testid="approval-yours"]`).Length(), "the second approver has not approved")
}
