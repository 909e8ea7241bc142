package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb11CrossSiteLinkRaisesTheDashboardThreshold: the dashboard's
// "Oldest red after" (?stale=) is kept in the person's session
// (sessionDashboardStale) by a plain GET of "/", and the session cookie is
// SameSite=Lax, which a top-level navigation from another site carries.
// So any page an on-call person opens (or any link sent to them) can set
// their threshold to 24 hours: from then on, for the rest of the session
// (up to 12 h), their dashboard shows a dead letter unresolved for 2 hours
// (or 23) as fine: no red "Oldest unresolved" card, no stale age in the
// tenants table. The person chose nothing. GETs that write an audit row
// are refused when another site started them (Route.Writes, fetchmeta.go);
// a GET that writes the session's settings is not.
//
// Severity: low (another site quietly switches off the dashboard's staleness
// signal for one person). Expected: a threshold is kept only when the
// console's own page chose it (Sec-Fetch-Site same-origin, or no fetch
// metadata); another site's link may show the dashboard with it, once,
// but does not keep it.
func TestRevWeb11CrossSiteLinkRaisesTheDashboardThreshold(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "rw11-stale-1",
		Error: "refund timed out", At: time.Now().Add(-2 * time.Hour)})

	before := b.Do(t, oncall, http.MethodGet, "/", nil, nil)
	require.Equal(t, http.StatusOK, before.Status, before.Body)
	require.True(t, byID(before.Doc(t), "kpi-oldest").HasClass("kpi--danger"),
		"precondition: a dead letter unresolved for 2 h is red under the default threshold (1 h)")

	// Another site's page links (or redirects) the person's browser to the
	// dashboard with a threshold of its choosing.
	lured := b.Do(t, oncall, http.MethodGet, "/?stale=24h", nil,
		map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"})
	require.Less(t, lured.Status, http.StatusInternalServerError, lured.Body)

	// Later, the person opens their dashboard from the console's own navigation.
	after := b.Do(t, oncall, http.MethodGet, "/", nil, map[string]string{"Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusOK, after.Status, after.Body)
	d := after.Doc(t)
	t.Logf("threshold shown after the other site's link: %q", byID(d, "stale-select").Find("option[selected]").AttrOr("value", ""))
	assert.True(t, byID(d, "kpi-oldest").HasClass("kpi--danger"),
		"another site's link set the person's kept threshold to 24 h: a dead letter unresolved for 2 h no longer shows red on their dashboard")
}
