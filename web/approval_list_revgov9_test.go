package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevGov9ApprovalsPageDropsTheLongestWaiting: the approvals page says
// it lists "the longest waiting first", but it reads the 500 NEWEST
// requests waiting for approval (id DESC, Limit 500), throws away List's
// "more" and reverses them. With more than 500 waiting, the oldest ones,
// the ones about to expire, are on no page at all, and nothing says that
// some were left out.
func TestRevGov9ApprovalsPageDropsTheLongestWaiting(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, requester := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	var oldest replay.Request
	for i := 0; i < 501; i++ {
		req := testfactory.Request(t, b.Replays, requester.Actor,
			[]int64{seed(t, b, "acme", "ledger.delete", fmt.Sprintf("led-%d", i), nil)}, replay.SubmitInput{})
		if i == 0 {
			oldest = req
		}
	}
	resp := b.Do(t, approver, "GET", "/approvals", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	doc := resp.Doc(t)
	rows := doc.Find(`[data-testid="approval-row"]`)
	require.Positive(t, rows.Length())
	first, _ := rows.First().Find(`a`).First().Attr("href")
	assert.Equal(t, fmt.Sprintf("/replay/requests/%d", oldest.ID), first,
		"the longest-waiting request (the first of 501) must head the approvals page; it is not listed at all (%d rows shown)", rows.Length())
}
