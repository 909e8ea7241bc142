package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestFixLeft11RequestPageSaysWhoSettlesOnce: a request whose three items
// need reconciliation, seen by its requester (who may not settle them):
// the page says who settles them once, above the items, not on each row.
func TestFixLeft11RequestPageSaysWhoSettlesOnce(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, who := b.SignIn(t, "acme:oncall", "acme:approver")
	var ids []int64
	for i := range 3 {
		ids = append(ids, seed(t, b, "acme", "search.index_update", fmt.Sprintf("fl11-settle-%d", i), nil))
	}
	req := testfactory.Request(t, b.Replays, who.Actor, ids, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.Pool, req.ID)

	resp := b.Do(t, oncall, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	require.Equal(t, 3, d.Find(`[data-testid="replay-item"]`).Length())
	once := d.Find(`[data-testid="replay-items-settler"]`)
	require.Equal(t, 1, once.Length(), "said once, at the Items section")
	assert.Contains(t, once.Text(), "Each item that needs reconciliation waits for an approver of acme")
	assert.Contains(t, once.Text(), "You requested this replay")
	assert.Equal(t, 1, strings.Count(d.Text(), "to settle it (not the replay's requester)"), "not repeated on the rows")
}

// TestFixLeft11ApprovalsOtherAccountIsNotYou: the approvals page marks a
// request of the viewer's own account "(you)", and one whose requester is
// another account with the viewer's email (MayBeOne: they may not approve
// it) as that, not as "(you)".
func TestFixLeft11ApprovalsOtherAccountIsNotYou(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	const email = "fl11-dana@example.com"
	viewer, me := b.SignInAs(t, &mockoidc.MockUser{Subject: "fl11-dana-work", Email: email, EmailVerified: true}, "acme:oncall", "acme:approver")
	_, other := b.SignInAs(t, &mockoidc.MockUser{Subject: "fl11-dana-home", Email: email, EmailVerified: true}, "acme:oncall", "acme:approver")
	mine := testfactory.Request(t, b.Replays, me.Actor, []int64{seed(t, b, "acme", "ledger.delete", "fl11-own-1", nil)}, replay.SubmitInput{})
	theirs := testfactory.Request(t, b.Replays, other.Actor, []int64{seed(t, b, "acme", "ledger.delete", "fl11-own-2", nil)}, replay.SubmitInput{})

	resp := b.Do(t, viewer, "GET", "/approvals", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	marks := map[string]string{}
	d.Find(`[data-testid="approval-row"]`).Each(func(_ int, row *goquery.Selection) {
		href, _ := row.Find(`a.row-link`).Attr("href")
		marks[href] = strings.TrimSpace(row.Find(`[data-testid="approval-own"]`).Text())
	})
	assert.Equal(t, "(you)", marks[fmt.Sprintf("/replay/requests/%d", mine.ID)], "the viewer's own account")
	assert.Equal(t, "(another account with your email)", marks[fmt.Sprintf("/replay/requests/%d", theirs.ID)], "another account, the same person by email")
}

// TestFixLeft11SingleCloseConflictIs409: a confirmed discard of one dead
// letter on its own route that Close refuses as a conflict is answered as
// the bulk route answers one: 409 and the confirmation page, saying
// nothing changed and why, with the way back; not a redirect with a flash.
func TestFixLeft11SingleCloseConflictIs409(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, who := b.SignIn(t, "acme:oncall")
	ctx := context.Background()

	t.Run("HeldByARunningRequest", func(t *testing.T) {
		t.Parallel()
		id := seed(t, b, "acme", "search.index_update", "fl11-close-held", nil)
		req := testfactory.Request(t, b.Replays, who.Actor, []int64{id}, replay.SubmitInput{})
		_, err := b.Pool.Exec(ctx, `UPDATE replay_requests SET status = 'running' WHERE id = $1`, req.ID)
		require.NoError(t, err)
		resp := b.Do(t, oncall, "POST", fmt.Sprintf("/deadletters/%d/discard", id),
			url.Values{"reason": {"duplicate"}, "version": {"1"}, views.ConfirmedField: {"1"}}, nil)
		require.Equal(t, http.StatusConflict, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.Contains(t, textOf(d, `[data-testid="confirm-error"]`), "Nothing changed:")
		left := textOf(d, `[data-testid="left-out-group"]`)
		assert.Contains(t, left, replaypolicy.HeldFreedBy(req.ID, "running", "acme"), "names the request and what frees it")
		assert.Contains(t, left, "Emergency stop", "a running request is stopped, as its page calls it")
		assert.Zero(t, d.Find(`[data-testid="confirm-submit"]`).Length(), "nothing to confirm")
		back, _ := d.Find(`[data-testid="confirm-back"]`).Attr("href")
		assert.Equal(t, fmt.Sprintf("/deadletters/%d", id), back, "the way back to it")
		dl, err := dlq.NewStore(b.Pool).Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, dlq.StatusReplayRequested, dl.Status, "nothing changed")
	})

	t.Run("ChangedMeanwhile", func(t *testing.T) {
		t.Parallel()
		id := seed(t, b, "acme", "search.index_update", "fl11-close-stale", nil)
		before, err := dlq.NewStore(b.Pool).Get(ctx, id)
		require.NoError(t, err)
		stale := strconv.Itoa(int(before.Version) + 5)
		resp := b.Do(t, oncall, "POST", fmt.Sprintf("/deadletters/%d/resolve", id),
			url.Values{"reason": {"fixed by hand"}, "version": {stale}, views.ConfirmedField: {"1"}}, nil)
		require.Equal(t, http.StatusConflict, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.Contains(t, textOf(d, `[data-testid="confirm-error"]`), "Nothing changed:")
		require.Equal(t, 1, d.Find(`[data-testid="confirm-submit"]`).Length(), "still open: it may be confirmed again as it is now")
		assert.Equal(t, "fixed by hand", textOf(d, `[data-testid="confirm-reason"]`), "the reason typed is kept")
		version, _ := d.Find(`[data-testid="confirm-form"] input[name="version"]`).Attr("value")
		assert.Equal(t, strconv.Itoa(int(before.Version)), version, "at the version it has now")
		again := b.Do(t, oncall, "POST", fmt.Sprintf("/deadletters/%d/resolve", id),
			url.Values{"reason": {"fixed by hand"}, "version": {version}, views.ConfirmedField: {"1"}}, nil)
		require.Equal(t, http.StatusSeeOther, again.Status, again.Body)
		dl, err := dlq.NewStore(b.Pool).Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, dlq.StatusResolved, dl.Status)
	})
}
