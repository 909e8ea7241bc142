package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestExecutionRightsFollowRevocation: requests approved by people whose
// rights went away before the worker ran are not published. One approver
// is signed out everywhere by an admin, one is refused by the identity
// provider at a refresh, and the groups of a third were last read longer
// ago than a session lives; a fourth approver's request is published. The
// revoked approver signs in again and their next approval is published.
func TestExecutionRightsFollowRevocation(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	stream := targetStream(t, b)
	oncall, _ := b.SignIn(t, "acme:oncall")
	admin, _ := b.SignIn(t, "*:admin")
	approve := func(c *http.Client, reqPath string) {
		t.Helper()
		r, err := b.Replays.Request(ctx, mustID(t, reqPath))
		require.NoError(t, err)
		require.Equal(t, replay.StatusPendingApproval, r.Status)
		resp := b.Do(t, c, "POST", reqPath+"/approve", url.Values{"intent": {r.IntentHex()}, "version": {strconv.Itoa(r.Version)}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	}
	request := func(msgID string) string {
		t.Helper()
		id := seed(t, b, "acme", "email.send", msgID, map[string][]string{dlq.HeaderOperationID: {"op-" + msgID}})
		return requestReplay(t, b, oncall, id) // same_operation: one approver
	}
	jobResult := func(reqPath string) (string, string) {
		t.Helper()
		var state, result string
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT state, result FROM replay_jobs WHERE request_id = $1`, mustID(t, reqPath)).Scan(&state, &result))
		return state, result
	}

	// Revoked by an admin after approving.
	revokedClient, revoked := b.SignIn(t, "acme:approver")
	byRevoked := request("by-revoked")
	approve(revokedClient, byRevoked)
	resp := b.Do(t, admin, "POST", "/admin/sessions/revoke", url.Values{"issuer": {revoked.Issuer}, "subject": {revoked.Subject}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	// Refused by the identity provider at the next refresh.
	refusedClient, refused := b.SignIn(t, "acme:approver")
	byRefused := request("by-refused")
	approve(refusedClient, byRefused)
	_, err := b.Pool.Exec(ctx, `UPDATE user_sessions SET refresh_token = 'revoked-at-the-provider', refreshed_at = now() - interval '2 hours'
        WHERE subject = $1`, refused.Subject)
	require.NoError(t, err)
	home := b.Do(t, refusedClient, "GET", "/", nil, nil)
	require.Equal(t, http.StatusFound, home.Status, "the refresh fails: signed out")

	// Groups last read longer ago than a session lives.
	staleClient, stale := b.SignIn(t, "acme:approver")
	byStale := request("by-stale")
	approve(staleClient, byStale)
	_, err = b.Pool.Exec(ctx, `UPDATE user_directory SET seen_at = now() - interval '13 hours' WHERE subject = $1`, stale.Subject)
	require.NoError(t, err)

	freshClient, _ := b.SignIn(t, "acme:approver")
	byFresh := request("by-fresh")
	approve(freshClient, byFresh)

	runReplays(t, b)
	wait.Until(t, "the fresh approver's request published", 30*time.Second, func() bool { return len(stream()) >= 1 })
	for _, tt := range []struct{ path, who string }{{byRevoked, revoked.Email}, {byRefused, refused.Email}, {byStale, stale.Email}} {
		wait.Until(t, "the job of "+tt.path+" to end", 30*time.Second, func() bool {
			state, _ := jobResult(tt.path)
			return state != string(replay.JobPending) && state != string(replay.JobClaimed)
		})
		state, result := jobResult(tt.path)
		assert.Equal(t, string(replay.JobBlocked), state, tt.path)
		assert.Equal(t, fmt.Sprintf("the approver %s no longer may approve same_operation replays in acme", tt.who), result, tt.path)
	}
	assert.Equal(t, []string{"by-fresh"}, stream(), "only the request of an approver who still holds the right")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'auth.session_end' AND actor_subject = $1", refused.Subject), "the refused refresh is audited")

	// Signing in again is the provider vouching again: rights come back.
	againClient, _ := b.SignInAs(t, testfactory.Again(revoked), "acme:approver")
	byAgain := request("by-again")
	approve(againClient, byAgain)
	wait.Until(t, "the returning approver's request published", 30*time.Second, func() bool { return len(stream()) == 2 })
	e, err := authz.NewDirectory(b.Pool).Lookup(ctx, refused.Issuer, refused.Subject)
	require.NoError(t, err)
	assert.Empty(t, e.Groups, "the refused approver's groups are forgotten")
	assert.Equal(t, "the identity provider did not refresh the sign-in", e.RevokedReason)
}
