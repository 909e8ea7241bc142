package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixLeft13ApproveRefusedWhenTheDirectoryMakesTheApproverTheRequester:
// an approver whose directory entry now has the requester's verified email
// (another identity of the same person) is not offered the approval, and a
// crafted approve is refused with the request page and the reason (422),
// audited as denied, with no approval recorded; the message is at the
// approve form, not at the typed confirmation.
func TestFixLeft13ApproveRefusedWhenTheDirectoryMakesTheApproverTheRequester(t *testing.T) {
	t.Parallel()
	c := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	_, requester := c.SignIn(t, "acme:oncall")
	approver, approverUser := c.SignIn(t, "acme:approver")
	id := seed(t, c, "acme", "email.send", "fixleft13-web-now", map[string][]string{"Dlq-Operation-Id": {"op-fixleft13-web-now"}})
	req := testfactory.Request(t, c.Replays, requester.Actor, []int64{id}, replay.SubmitInput{})
	_, err := c.DB.OwnerPool.Exec(ctx, `UPDATE user_directory SET email = $3, email_verified = true WHERE issuer = $1 AND subject = $2`,
		approverUser.Issuer, approverUser.Subject, requester.Email)
	require.NoError(t, err)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	d := c.Do(t, approver, "GET", path, nil, nil).Doc(t)
	assert.Zero(t, d.Find(`[data-testid="approve"]`).Length(), "not offered")

	resp := c.Do(t, approver, "POST", path+"/approve", url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	page := resp.Doc(t)
	assert.Contains(t, page.Find(`[data-testid="flash"]`).Text(), "your account, as the directory has it now")
	assert.NotContains(t, page.Find(`#confirmation-error, [data-testid="field-error-confirmation"]`).Text(), "directory")
	assert.Equal(t, 1, c.AuditCount(t, "action = 'replay.approve' AND outcome = 'denied' AND actor_subject = $1", approverUser.Subject))
	var approvals int
	require.NoError(t, c.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_approvals WHERE request_id = $1`, req.ID).Scan(&approvals))
	assert.Zero(t, approvals)
	assert.True(t, strings.Contains(resp.Body, "approve"), "the request page, re-rendered")
}
