package web_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixLeft13ChartZone: the dashboard's arrivals chart counts UTC hours,
// and says so where its hours are read (its title and its time axis), for
// a person who shows times in their browser's zone too; each axis label
// carries the instant it marks, in UTC.
func TestFixLeft13ChartZone(t *testing.T) {
	t.Parallel()
	c := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	testfactory.DeadLetters(t, c.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund"})
	client, _ := c.SignIn(t, "acme:oncall")
	for _, zone := range []string{"utc", "local"} {
		resp := c.Do(t, client, "POST", "/settings/time", url.Values{"time_zone": {zone}, "return_to": {"/"}}, nil)
		require.Less(t, resp.Status, 400, resp.Body)
		for _, span := range []string{"24h", "7d"} {
			d := c.Do(t, client, "GET", "/?span="+span, nil, nil).Doc(t)
			assert.Contains(t, d.Find("#h-chart").Text(), "(UTC)", "%s, %s: the title names the zone", zone, span)
			assert.Equal(t, "UTC", strings.TrimSpace(byID(d, "chart-x-zone").Text()), "%s, %s: the axis names the zone", zone, span)
			labels := d.Find(`[data-testid="chart-x-label"]`)
			require.Equal(t, 6, labels.Length())
			labels.Each(func(_ int, l *goquery.Selection) {
				at, err := time.Parse(time.RFC3339, l.AttrOr("datetime", ""))
				require.NoError(t, err)
				assert.True(t, strings.HasSuffix(l.AttrOr("datetime", ""), "Z"))
				want := at.UTC().Format("15:04")
				if span == "7d" {
					want = at.UTC().Format("Jan 2")
				}
				assert.Equal(t, want, l.Text())
			})
		}
	}
}
