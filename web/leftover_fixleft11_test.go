package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
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
