package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixLeft13DashboardReplays: the dashboard has a line on the replay
// requests of the person's tenants that went wrong: how many have an item
// waiting for a person to reconcile it, how many were done with problems
// (submitted in the last 7 days), each a link to the replays page that
// lists exactly those; another tenant's requests and older ones are not
// counted; and the dashboard still costs at most two round trips.
func TestFixLeft13DashboardReplays(t *testing.T) {
	t.Parallel()
	c, st := tracedConsole(t)
	ctx := context.Background()
	viewer, _ := c.SignIn(t, "acme:oncall")
	_, requester := c.SignIn(t, "acme:oncall", "globex:oncall")
	request := func(tenant, msgID string) int64 {
		id := seed(t, c, tenant, "search.index_update", msgID, nil)
		return testfactory.Request(t, c.Replays, requester.Actor, []int64{id}, replay.SubmitInput{Reason: "reindex"}).ID
	}
	waits := request("acme", "att-waits") // an item waits for a person, and the request is done with problems
	testfactory.NeedsPerson(t, c.Pool, waits)
	problems := request("acme", "att-problems") // done with problems, nothing waits
	old := request("acme", "att-old")           // done with problems, submitted 8 days ago
	other := request("globex", "att-other")     // another tenant's
	testfactory.NeedsPerson(t, c.Pool, other)
	request("acme", "att-fine") // approved, nothing went wrong
	for _, q := range []string{
		fmt.Sprintf(`UPDATE replay_requests SET status = 'done_with_problems' WHERE id IN (%d, %d)`, problems, old),
		fmt.Sprintf(`UPDATE replay_requests SET submitted_at = now() - interval '8 days', created_at = now() - interval '8 days' WHERE id = %d`, old),
	} {
		_, err := c.Pool.Exec(ctx, q)
		require.NoError(t, err)
	}

	d := c.Do(t, viewer, "GET", "/", nil, nil).Doc(t)
	line := d.Find(`[data-testid="replay-attention"]`)
	require.Equal(t, 1, line.Length(), "the dashboard has the replays line")
	assert.True(t, line.HasClass("dash-line--warn"), "amber: requests went wrong")
	assert.Equal(t, "1", strings.TrimSpace(line.Find(`[data-testid="attention-reconcile-n"]`).Text()))
	assert.Equal(t, "2", strings.TrimSpace(line.Find(`[data-testid="attention-problems-n"]`).Text()))

	listed := func(sel string) []string {
		href, ok := line.Find(sel).Attr("href")
		require.True(t, ok)
		resp := c.Do(t, viewer, "GET", href, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		var ids []string
		resp.Doc(t).Find(`[data-testid="replay-row"]`).Each(func(_ int, s *goquery.Selection) {
			ids = append(ids, s.AttrOr("data-id", ""))
		})
		return ids
	}
	assert.Equal(t, []string{fmt.Sprint(waits)}, listed(`[data-testid="attention-reconcile"]`),
		"the link lists the requests counted as waiting for reconciliation")
	assert.ElementsMatch(t, []string{fmt.Sprint(waits), fmt.Sprint(problems)}, listed(`[data-testid="attention-problems"]`),
		"the link lists the requests counted as done with problems")

	trips := roundTrips(t, c, st, viewer, "/")
	assert.LessOrEqual(t, len(trips), 2, "round trips of the dashboard:\n%s", strings.Join(trips, "\n"))

	// Nothing went wrong in a tenant where nothing was requested: no amber.
	calm, _ := c.SignIn(t, "initech:oncall")
	line = c.Do(t, calm, "GET", "/", nil, nil).Doc(t).Find(`[data-testid="replay-attention"]`)
	require.Equal(t, 1, line.Length())
	assert.False(t, line.HasClass("dash-line--warn"))
	assert.Equal(t, "0", strings.TrimSpace(line.Find(`[data-testid="attention-reconcile-n"]`).Text()))
}
