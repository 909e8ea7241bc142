package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestApprovalsPagePagesWhatTheViewerMayApprove: behind more
// same_operation requests than a page holds, all waiting longer, an
// approver who may approve only manual replays still finds the manual
// request waiting for them (the query selects what they may approve before
// its limit); an approver of every class is told how many more wait after
// the page and reaches them on the next one.
func TestApprovalsPagePagesWhatTheViewerMayApprove(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, requester := b.SignIn(t, "acme:oncall")
	everything, _ := b.SignIn(t, "acme:approver")
	const sameOps = 101 // more than a page
	var first replay.Request
	for i := range sameOps {
		req := testfactory.Request(t, b.Replays, requester.Actor, []int64{seed(t, b, "acme", "email.send", fmt.Sprintf("mail-page-%d", i), opHeader(fmt.Sprintf("op-page-%d", i)))},
			replay.SubmitInput{})
		if i == 0 {
			first = req
		}
	}
	manual := testfactory.Request(t, b.Replays, requester.Actor, []int64{seed(t, b, "acme", "orders.refund", "refund-page", nil)}, replay.SubmitInput{})
	hrefs := func(c *http.Client, path string) ([]string, testfactory.Response) {
		t.Helper()
		resp := b.Do(t, c, "GET", path, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		var out []string
		resp.Doc(t).Find(`[data-testid="approval-row"] a.row-link`).Each(func(_ int, a *goquery.Selection) {
			out = append(out, a.AttrOr("href", ""))
		})
		return out, resp
	}

	t.Run("MoreThanAPage", func(t *testing.T) {
		listed, resp := hrefs(everything, "/approvals")
		require.Len(t, listed, 100)
		assert.Equal(t, fmt.Sprintf("/replay/requests/%d", first.ID), listed[0], "the longest waiting first")
		doc := resp.Doc(t)
		more := strings.Join(strings.Fields(doc.Find(`[data-testid="approvals-more"]`).Text()), " ")
		assert.Contains(t, more, "2 more requests wait")
		next := doc.Find(`[data-testid="approvals-more"] a`).AttrOr("href", "")
		assert.Equal(t, next, doc.Find(`[data-testid="pager-next"]`).AttrOr("href", ""))
		rest, resp := hrefs(everything, next)
		assert.Len(t, rest, 2, "the rest")
		assert.NotContains(t, rest, listed[99])
		assert.Equal(t, fmt.Sprintf("/replay/requests/%d", manual.ID), rest[1], "the newest last")
		assert.Equal(t, "/approvals", resp.Doc(t).Find(`[data-testid="pager-prev"]`).AttrOr("href", ""), "back to the first page")
		assert.Zero(t, resp.Doc(t).Find(`[data-testid="approvals-more"]`).Length(), "nothing after the last page")

		broken := b.Do(t, everything, "GET", "/approvals?after=yesterday", nil, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, broken.Status, "a broken page link says so")
	})
	t.Run("OneClassOnly", func(t *testing.T) {
		setPolicyLines(t, b, authz.RoleApprover, authz.ActApprove, authz.ReplayObject("manual"))
		manualOnly, _ := b.SignIn(t, "acme:approver")
		listed, resp := hrefs(manualOnly, "/approvals")
		assert.Equal(t, []string{fmt.Sprintf("/replay/requests/%d", manual.ID)}, listed,
			"theirs, behind more older requests they cannot approve than a page holds")
		assert.Zero(t, resp.Doc(t).Find(`[data-testid="approvals-more"]`).Length())
	})
}
