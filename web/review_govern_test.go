package web_test

// Review (rev-govern): failing tests for paths that reach an effect
// without passing the rule.

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestRequesterCannotRejectOwnRequest: separation of duties says an
// approver approves or rejects, never their own request (DESIGN, users
// table; View.Reviewer: "the viewer is not the requester, so they may
// approve or reject"). The page hides the reject button from the
// requester, but a crafted POST to the reject route by a requester who
// also holds the approver role closes their own request as "rejected",
// and the audit log says it was rejected by a reviewer who was the
// requester.
func TestRequesterCannotRejectOwnRequest(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	both, _ := b.SignIn(t, "acme:oncall", "acme:approver")
	id := seed(t, b, "acme", "email.send", "mail-rej-1", map[string][]string{dlq.HeaderOperationID: {"send-rej-1"}})
	reqPath := requestReplay(t, b, both, id)

	page := b.Do(t, both, "GET", reqPath, nil, nil).Doc(t)
	require.Zero(t, page.Find(`[data-testid="reject"]`).Length(), "the page offers the requester no reject button")

	resp := b.Do(t, both, "POST", reqPath+"/reject", url.Values{"reason": {"my own"}, views.ConfirmedField: {"1"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "a crafted reject by the requester is refused, as a crafted approve is")
	r, err := b.Replays.Request(t.Context(), mustID(t, reqPath))
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status, "the request was closed as rejected by its own requester")
	_ = fmt.Sprint
}
