package web_test

import (
	"net/http"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestTablesLeaveOutWholeColumns: from 861px to 1359px the replays and
// audit tables leave out a column (mid-hide) to fit a 1024px page; its
// head and every cell under it go together, or the columns would shift
// under their heads. The replays' tenant shows under the request's number
// there instead (mid-only).
func TestTablesLeaveOutWholeColumns(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ids := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed"},
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed"})
	oncall, person := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "*:auditor")
	testfactory.Draft(t, b.Replays, person.Actor, ids...)

	for _, tc := range []struct {
		path, table string
		client      *http.Client
		hidden      string
	}{
		{"/replay/requests", "replays-table", oncall, "Tenant"},
		{"/audit", "audit-table", auditor, "Message"},
	} {
		d := b.Do(t, tc.client, "GET", tc.path, nil, nil).Doc(t)
		table := byID(d, tc.table)
		require.Equal(t, 1, table.Length(), tc.path)
		heads := table.Find("thead th")
		rows := table.Find("tbody tr")
		require.NotZero(t, rows.Length(), tc.path)
		var hidden []string
		heads.Each(func(i int, th *goquery.Selection) {
			if th.HasClass("mid-hide") {
				hidden = append(hidden, text(th))
			}
			rows.Each(func(_ int, tr *goquery.Selection) {
				td := tr.Children().Eq(i)
				assert.Equal(t, text(th), td.AttrOr("data-label", ""), "%s: column %d", tc.path, i)
				assert.Equal(t, th.HasClass("mid-hide"), td.HasClass("mid-hide"), "%s: column %q", tc.path, text(th))
			})
		})
		assert.Equal(t, []string{tc.hidden}, hidden, tc.path)
	}

	d := b.Do(t, oncall, "GET", "/replay/requests", nil, nil).Doc(t)
	request := byID(d, "replay-row").First().Find(`td[data-label="Request"]`)
	assert.Equal(t, "acme", text(request.Find(".mid-only")), "the tenant under the request's number")
}
