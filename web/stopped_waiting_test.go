package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestStoppedRequestWithItemsWaitingStaysAmber: an emergency stop of a
// request done with problems ends it cancelled, but its item that needs
// reconciliation still waits for a person. The request's badge, on its
// page and on the replays page, and the alert saying who stopped it, stay
// amber while it waits, and the alert names the stop once: "Cancelled by
// X: emergency stop: why", not "by X" twice.
func TestStoppedRequestWithItemsWaitingStaysAmber(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, approverUser := b.SignIn(t, "acme:approver")

	id := seed(t, b, "acme", "search.index_update", "stopped-waiting", nil)
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "reindex"})
	testfactory.NeedsPerson(t, b.Pool, req.ID)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	resp := b.Do(t, approver, "POST", path+"/stop", url.Values{"reason": {"wrong index"}, "confirm": {"STOP"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	r, err := b.Replays.Request(t.Context(), req.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusCancelled, r.Status)

	page := b.Do(t, approver, "GET", path, nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	doc := page.Doc(t)
	badge := doc.Find(`[data-testid="replay-status"] [data-testid="badge"]`)
	assert.Contains(t, badge.AttrOr("class", ""), "warn", "a stopped request whose item waits for a person is not done with: its badge stays amber")
	alert := doc.Find(`[data-testid="replay-status-reason"]`)
	assert.Contains(t, alert.AttrOr("class", ""), "alert--warn")
	text := strings.Join(strings.Fields(alert.Text()), " ")
	assert.Equal(t, 1, strings.Count(text, approverUser.Email), "the alert names who stopped it once: %q", text)
	assert.Contains(t, text, "emergency stop: wrong index")

	list := b.Do(t, approver, "GET", "/replay/requests?status=cancelled", nil, nil)
	require.Equal(t, http.StatusOK, list.Status, list.Body)
	row := list.Doc(t).Find(fmt.Sprintf(`[data-testid="replay-row"][data-id="%d"] [data-testid="replay-row-status"] [data-testid="badge"]`, req.ID))
	require.Equal(t, 1, row.Length())
	assert.Contains(t, row.AttrOr("class", ""), "warn", "the replays page's badge of it stays amber as well")
}
