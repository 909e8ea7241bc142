package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestGroupReplayOfferedByPolicy: the groups page offers a group replay
// where the policy lets more than one of its dead letters go together,
// and where it does not (manual refunds) says why instead.
func TestGroupReplayOfferedByPolicy(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	for i := range 2 {
		testfactory.DeadLetters(t, b.Pool,
			testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: fmt.Sprintf("grp-refund-%d", i), Error: "refund failed: upstream 503"},
			testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("grp-index-%d", i), Error: "index shard 4 unavailable"})
	}
	d := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t)
	rows := d.Find(`[data-testid="group-row"]`)
	require.Equal(t, 2, rows.Length())
	rows.Each(func(_ int, r *goquery.Selection) {
		switch types := strings.TrimSpace(r.Find(`[data-testid="group-types"]`).Text()); types {
		case "orders.refund":
			o := offerOf(t, b, oncall, r)
			assert.Zero(t, o.Find(`[data-testid="group-replay"]`).Length(), "manual: not offered")
			assert.Equal(t, "No group replay: manual items cannot be replayed in bulk: request them one at a time.",
				o.Find(`[data-testid="group-replay-none"]`).Text())
		case "search.index_update":
			assert.Equal(t, 1, offerOf(t, b, oncall, r).Find(`[data-testid="group-replay"]`).Length(), "rebuildable: offered")
		default:
			t.Errorf("unexpected group of %q", types)
		}
	})
}

// TestDashboardTenantOldestLeadsToIt: each tenant's oldest unresolved age
// on the dashboard links that dead letter, as the red card does.
func TestDashboardTenantOldestLeadsToIt(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	now := time.Now()
	ids := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "dash-old", Error: "x", At: now.Add(-5 * time.Hour)},
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "dash-new", Error: "x", At: now.Add(-time.Minute)})
	_, err := b.Store.Counters().Refresh(t.Context())
	require.NoError(t, err)
	d := b.Do(t, oncall, "GET", "/", nil, nil).Doc(t)
	want := fmt.Sprintf("/deadletters/%d", ids[0])
	assert.Equal(t, want, d.Find(`[data-testid="kpi-oldest"]`).AttrOr("href", ""))
	assert.Equal(t, want, d.Find(`[data-testid="tenant-row"][data-tenant="acme"] [data-testid="tenant-oldest"]`).Parent().AttrOr("href", ""))
	assert.Equal(t, 1, d.Find(`#dashboard [data-testid="dashboard-asof"] time`).Length(), "the 'as of' time is refreshed with the figures")
}

// TestSnoozeWithoutEndSaysWhatIsMissing: "no time limit" with no count is
// refused with a message at the count, which ends such a snooze.
func TestSnoozeWithoutEndSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "snz-none", nil)
	groups := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t)
	fp := groups.Find(`[data-testid="group-row"]`).AttrOr("data-fingerprint", "")
	require.NotEmpty(t, fp)
	resp := b.Do(t, oncall, "POST", "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {""}, "grows": {""}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	assert.Equal(t, "With no time limit, say how many more dead letters end the snooze, or choose a time.",
		textOf(resp.Doc(t), `[data-testid="field-error-grows"]`))
}
