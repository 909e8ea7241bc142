package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testidp"
	"github.com/quarantine-console/quarantine/views"
)

// TestRev43GmailSpellingOfTheRequesterCannotApprove: with a Dex in front of
// GitHub and Google, Ann verifies ann.smith@gmail.com at GitHub and signs
// in through Google as annsmith@gmail.com, one Gmail inbox. Her Google
// identity, an approver, is the requester of what her GitHub identity (the
// on-call) asked for: it is offered no approval, and a crafted approve or
// reject is refused, with no approval recorded and the request still
// waiting.
func TestRev43GmailSpellingOfTheRequesterCannotApprove(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := t.Context()
	_, github := b.SignInAs(t, testidp.Person{ID: "ann-gh", Email: "ann.smith@gmail.com", EmailVerified: true}, "acme:oncall")
	google, googleUser := b.SignInAs(t, testidp.Person{ID: "ann-google", Email: "annsmith@gmail.com", EmailVerified: true}, "acme:approver")
	dl := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rev43-gmail",
		Payload: []byte(`{"doc":1}`)})
	batch, drafts := testfactory.Draft(t, b.Replays, github.Actor, dl)
	require.Len(t, drafts, 1)
	require.NoError(t, b.Replays.EditPayload(ctx, drafts[0].ID, dl, github.Actor,
		replay.PayloadEdit{Payload: []byte(`{"doc":2}`), Reason: "fix"}, quarantine.RequestMeta{}))
	reqs, err := b.Replays.Submit(ctx, batch, github.Actor, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	req := reqs[0]
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	d := b.Do(t, google, "GET", path, nil, nil).Doc(t)
	assert.Zero(t, d.Find(`[data-testid="approve"]`).Length(), "the requester's other spelling is offered no approval")

	approve := b.Do(t, google, "POST", path+"/approve", url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}}, nil)
	assert.Equal(t, http.StatusForbidden, approve.Status, "approve by annsmith@gmail.com of ann.smith@gmail.com's request")
	reject := b.Do(t, google, "POST", path+"/reject", url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)},
		"reason": {"mine"}, views.ConfirmedField: {"1"}}, nil)
	assert.Equal(t, http.StatusForbidden, reject.Status, "reject by annsmith@gmail.com of ann.smith@gmail.com's request")

	now, err := b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, now.Status)
	var approvals int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_approvals WHERE request_id = $1`, req.ID).Scan(&approvals))
	assert.Zero(t, approvals)
	assert.Equal(t, 1, b.AuditCount(t, "action = 'replay.approve' AND outcome = 'denied' AND actor_subject = $1", googleUser.Subject))
}
