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

// TestFixUx12RequestAuditFilter: /audit?request=N holds request N's own
// entries and its items' (the settlement, its reason leading with the
// choice), not another request's items; its export holds the same; a
// broken request id is a message at the field (422).
func TestFixUx12RequestAuditFilter(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	auditor, _ := b.SignIn(t, "*:auditor", "acme:viewer")
	var reqs []int64
	for i := range 2 {
		id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update",
			MsgID: fmt.Sprintf("fixux12-audit-%d", i), Error: "index shard 4 unavailable"})
		req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "shard 4 back"})
		reqs = append(reqs, req.ID)
		if i == 0 {
			testfactory.NeedsPerson(t, b.Pool, req.ID)
			resp := b.Do(t, approver, "POST", fmt.Sprintf("/replay/requests/%d/items/%d/reconcile", req.ID, id),
				url.Values{"choice": {"not_applied"}, "note": {"sku-9 missing from acme-main"}}, nil)
			require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		}
	}
	rows := func(path string) []string {
		page := b.Do(t, auditor, "GET", path, nil, nil)
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		var out []string
		page.Doc(t).Find(`[data-testid="audit-row"]`).Each(func(_ int, r *goquery.Selection) {
			out = append(out, strings.Join(strings.Fields(r.Text()), " "))
		})
		return out
	}
	settled := strings.Join(rows(fmt.Sprintf("/audit?request=%d", reqs[0])), "\n")
	assert.Contains(t, settled, "replay.item.reconciled")
	assert.Contains(t, settled, "not applied: sku-9 missing from acme-main", "the reason says the choice")
	other := strings.Join(rows(fmt.Sprintf("/audit?request=%d", reqs[1])), "\n")
	assert.NotContains(t, other, "replay.item.reconciled", "the other request's log")
	assert.Contains(t, other, "replay.item.requested", "its own item")

	export := b.Do(t, auditor, "GET", fmt.Sprintf("/audit/export.jsonl?request=%d", reqs[0]), nil, nil)
	require.Equal(t, http.StatusOK, export.Status)
	assert.Contains(t, export.Body, "replay.item.reconciled")

	bad := b.Do(t, auditor, "GET", "/audit?request=x", nil, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, bad.Status)
}
