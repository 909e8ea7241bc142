package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixGov13ApproveFormReadsTextAsEveryForm: the approval form reads its
// intent and typed confirmation as every form reads text (readFormText):
// text no one could type from the page is refused at the form (422, with
// UnstorableTextMessage), and nothing is approved.
func TestFixGov13ApproveFormReadsTextAsEveryForm(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	_, u := b.SignIn(t, "*:oncall")
	approver, _ := b.SignIn(t, "*:approver")
	ids := testfactory.DeadLetters(t, b.Pool, testfactory.Letter{Tenant: "acme"})
	req := testfactory.Request(t, b.Replays, u.Actor, ids, replay.SubmitInput{})
	path := fmt.Sprintf("/replay/requests/%d/approve", req.ID)
	for name, form := range map[string]url.Values{
		"Intent":       {"intent": {req.IntentHex() + "\x00"}},
		"Confirmation": {"intent": {req.IntentHex()}, "confirmation": {"REPLAY \xff"}},
	} {
		r := b.Do(t, approver, http.MethodPost, path, form, map[string]string{"Accept": "text/html"})
		assert.Equal(t, http.StatusUnprocessableEntity, r.Status, name)
		assert.Contains(t, r.Body, dlq.UnstorableTextMessage, name)
	}
	as, err := b.Replays.Approvals(ctx, req.ID)
	require.NoError(t, err)
	assert.Empty(t, as, "nothing was approved")
}
