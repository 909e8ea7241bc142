package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRequestPageOffersStopWhereItEnds: the request page offers the
// emergency stop where the stop would end the request: on one done with
// problems whose item waits for a person (an approver could still
// republish it) as on an approved one, and the stop there ends it; not on
// one done without problems, nor once stopped.
func TestRequestPageOffersStopWhereItEnds(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	stopForm := func(id int64) *goquery.Selection {
		t.Helper()
		return b.Do(t, approver, "GET", fmt.Sprintf("/replay/requests/%d", id), nil, nil).Doc(t).Find(`[data-testid="stop-form"]`)
	}

	problems := testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "search.index_update", "page-problems", nil)}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.Pool, problems.ID)
	require.Equal(t, 1, stopForm(problems.ID).Length(), "a request whose item waits for a person may be stopped")
	resp := b.Do(t, approver, "POST", fmt.Sprintf("/replay/requests/%d/stop", problems.ID), url.Values{"reason": {"wrong index"}, "confirm": {"STOP"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	r, err := b.Replays.Request(t.Context(), problems.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusCancelled, r.Status)
	assert.Zero(t, stopForm(problems.ID).Length(), "a stopped request is not offered the stop again")

	targetStream(t, b)
	done := testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "search.index_update", "page-done", nil)}, replay.SubmitInput{})
	runWorker(t, b)
	wait.Until(t, "the replay done", 30*time.Second, func() bool {
		r, err := b.Replays.Request(t.Context(), done.ID)
		require.NoError(t, err)
		return r.Status == replay.StatusDone
	})
	assert.Zero(t, stopForm(done.ID).Length(), "a request done without problems has nothing to stop")
}

// TestPartialTenantStopSaysWhatItLeft: an approver who may stop only
// rebuildable replays stops a tenant: the page says how many requests it
// stopped, and, as an error, how many it left open and of which class.
func TestPartialTenantStopSaysWhatItLeft(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	setPolicyLines(t, b, authz.RoleApprover, authz.ActStop, authz.ReplayObject("rebuildable"))
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "search.index_update", "part-doc", nil)}, replay.SubmitInput{})
	mail := testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "email.send", "part-mail", opHeader("op-part"))}, replay.SubmitInput{})

	resp := b.Do(t, approver, "POST", "/replay/stop", url.Values{"tenant": {"acme"}, "reason": {"incident 12"}, "confirm": {"STOP"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	page := b.Do(t, approver, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	assert.Contains(t, page.Find(`[data-testid="flash"][data-kind="ok"]`).Text(), "Emergency stop in acme: 1 request stopped.")
	assert.Contains(t, page.Find(`[data-testid="flash"][data-kind="error"]`).Text(),
		"Not stopped: 1 request of same_operation, which you may not stop in acme, left open.")
	r, err := b.Replays.Request(t.Context(), mail.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status)
}
