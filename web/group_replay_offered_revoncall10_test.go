package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall10GroupReplayOfferedOnlyWhereItCanGo: on the groups page,
// each group's Actions menu offers "Replay N unresolved…". For a group of
// one item type whose rule is manual ("one item per request, no bulk":
// orders.refund in the shipped policy, and any item type no rule matches)
// and more than one dead letter, the offer can never be taken: manual is
// the strictest class, so every item of the group is manual whatever its
// subject, and the draft it makes blocks every item ("manual items cannot
// be replayed in bulk: request them one at a time") — a void draft, an
// audit row, and a page that says to go back. The screens server shows
// "Replay 57 unresolved…" for its 57 refunds (/tmp/rc10/groups-1024.png,
// /tmp/rc10/conf-manual-1024.png for the void draft of a manual group).
// A tired on-call reads the button as the way to replay the incident's
// group.
//
// Severity: low. Expected: the groups page offers a group replay only
// where some item of it could go, and says why not (one at a time) where
// none could.
func TestRevOncall10GroupReplayOfferedOnlyWhereItCanGo(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	var ids []int64
	for i := range 3 {
		ids = append(ids, testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund",
			MsgID: fmt.Sprintf("rvo10-refund-%d", i), Error: "refund failed: upstream 503 from payments-gateway"}))
	}

	groups := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t)
	rows := groups.Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rows.Length(), "one group of three refunds")
	offer := offerOf(t, b, oncall, rows).Find(`[data-testid="group-replay"]`)
	if offer.Length() == 0 {
		// Not offered: nothing misleads, and the menu says why not.
		assert.NotEmpty(t, strings.TrimSpace(offerOf(t, b, oncall, rows).Find(`[data-testid="group-replay-none"]`).Text()), "the menu says why there is no group replay")
		return
	}
	action, ok := offer.Closest("form").Attr("action")
	require.True(t, ok)
	resp := b.Do(t, oncall, "POST", action, nil, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil)
	require.Equal(t, http.StatusOK, confirm.Status, confirm.Body)
	d := confirm.Doc(t)
	require.Equal(t, len(ids), d.Find(`[data-testid="replay-item"]`).Length(), "the draft holds the group")
	assert.Positive(t, d.Find(`[data-testid="replay-item-verdict"][data-verdict="go"]`).Length(),
		"the groups page offers %q for a manual group, and every item of the draft it makes is blocked: %q",
		offer.Text(), d.Find(`[data-testid="replay-skip-reason"]`).First().Text())
}
