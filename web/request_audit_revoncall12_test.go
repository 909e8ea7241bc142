package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall12RequestAuditHoldsItsSettlements: an approver settles
// an item of a replay whose outcome nobody knew as "Applied" (the console
// records it replayed and writes the ledger, with no publish); an auditor
// then opens the request and follows its "Audit log" link. That view
// (?object=replay_request:N) holds the request's own rows: the draft, the
// submit, "done with problems", and the "done" that follows the
// settlement, but not the settlement itself (replay.item.reconciled is
// filed under the dead letter), so who decided "applied", on what
// evidence, is missing from the request's audit log; nor does the audit
// filter offer another way to ask for one request's item events.
func TestRevOncall12RequestAuditHoldsItsSettlements(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	auditor, _ := b.SignIn(t, "*:auditor", "acme:viewer")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "settled-applied",
		Error: "index shard 4 unavailable"})
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "shard 4 back"})
	testfactory.NeedsPerson(t, b.Pool, req.ID)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	resp := b.Do(t, approver, "POST", fmt.Sprintf("%s/items/%d/reconcile", path, id),
		url.Values{"choice": {"applied"}, "note": {"doc sku-9 is in index acme-main at v12"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	page := b.Do(t, auditor, "GET", path, nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	link, ok := page.Doc(t).Find(`[data-testid="replay-audit-link"]`).Attr("href")
	require.True(t, ok, "the request page links its audit log for an auditor")
	log := b.Do(t, auditor, "GET", link, nil, nil)
	require.Equal(t, http.StatusOK, log.Status)
	var actions []string
	log.Doc(t).Find(`[data-testid="audit-row"]`).Each(func(_ int, r *goquery.Selection) {
		actions = append(actions, strings.Join(strings.Fields(r.Text()), " "))
	})
	require.NotEmpty(t, actions)
	assert.True(t, strings.Contains(strings.Join(actions, "\n"), "replay.item.reconciled"),
		"the request's audit log (%s) leaves out who settled its item, and how:\n%s", link, strings.Join(actions, "\n"))
}
