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
