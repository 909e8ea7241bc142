package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

func TestDashboard(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	now := time.Now()
	ids := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Class: "unknown_effect", Error: "refund ord-1 timed out", At: now.Add(-5 * time.Minute)},
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Class: "unknown_effect", Error: "refund ord-2 timed out", At: now.Add(-90 * time.Minute)},
		testfactory.Letter{Tenant: "acme", ItemType: "email.send", Class: "permanent", Error: "smtp 550", At: now.Add(-3 * time.Hour)},
		testfactory.Letter{Tenant: "acme", ItemType: "email.send", Class: "permanent", Error: "smtp 550", At: now.Add(-30 * time.Hour)},
		testfactory.Letter{Tenant: "globex", ItemType: "email.send", Class: "transient", Error: "dial tcp: refused", At: now.Add(-2 * time.Minute)},
	)
	testfactory.SetStatus(t, b.Pool, dlq.StatusResolved, ids[3])

	c, _ := b.SignIn(t, "acme:viewer", "globex:viewer")

	t.Run("Numbers", func(t *testing.T) {
		resp := b.Do(t, c, "GET", "/", nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		d := resp.Doc(t)
		require.Equal(t, 1, byID(d, "dashboard").Length(), "readers of dead letters land on the dashboard")
		assert.Equal(t, "page", byID(d, "nav-dashboard").AttrOr("aria-current", ""))
		rows := byID(d, "tenant-row")
		require.Equal(t, 2, rows.Length())
		acme := rows.Eq(0)
		assert.Equal(t, "acme", acme.AttrOr("data-tenant", ""))
		assert.Equal(t, "3", text(acme.Find(`[data-testid="tenant-unresolved"]`)))
		assert.Equal(t, "1", text(acme.Find(`[data-testid="tenant-hour"]`)))
		assert.Equal(t, "3", text(acme.Find(`[data-testid="tenant-day"]`)))
		assert.Equal(t, "4", text(acme.Find(`[data-testid="tenant-total"]`)))
		assert.Equal(t, "3h ago", text(acme.Find(`[data-testid="tenant-oldest"]`)))
		assert.Equal(t, "/deadletters?status=unresolved&tenant=acme", acme.Find("a.row-link").AttrOr("href", ""))
		assert.Contains(t, text(byID(d, "kpi-unresolved")), "4")
		assert.Contains(t, text(byID(d, "kpi-hour")), "2")
		assert.Contains(t, text(byID(d, "kpi-day")), "4")

		chart := byID(d, "arrival-chart")
		assert.Equal(t, "4", chart.AttrOr("data-total", ""), "arrivals of the last 24 hours")
		assert.Equal(t, 24, chart.Find(`[data-testid="chart-bar"]`).Length())

		types := map[string]string{}
		byID(d, "by-type").Find(`[data-testid="dim-row"]`).Each(func(_ int, s *goquery.Selection) {
			types[s.AttrOr("data-value", "")] = text(s.Find(`[data-testid="dim-unresolved"]`))
		})
		assert.Equal(t, map[string]string{"orders.refund": "2", "email.send": "2"}, types)
		classes := map[string]string{}
		byID(d, "by-class").Find(`[data-testid="dim-row"]`).Each(func(_ int, s *goquery.Selection) {
			classes[s.AttrOr("data-value", "")] = text(s.Find(`[data-testid="dim-unresolved"]`))
		})
		assert.Equal(t, map[string]string{"unknown_effect": "2", "permanent": "1", "transient": "1"}, classes)

		groups := byID(d, "group-row")
		require.Equal(t, 3, groups.Length())
		assert.Equal(t, dlq.Fingerprint(dlq.ClassUnknownEffect, "refund ord-1 timed out", ""), groups.Eq(0).AttrOr("data-fingerprint", ""))
		assert.Equal(t, "2", text(groups.Eq(0).Find(`[data-testid="group-unresolved"]`)))
		assert.True(t, strings.HasPrefix(groups.Eq(0).Find(`[data-testid="group-link"]`).AttrOr("href", ""), "/deadletters?group="))
	})

	t.Run("StaleThreshold", func(t *testing.T) {
		d := b.Do(t, c, "GET", "/?stale=1h", nil, nil).Doc(t)
		assert.True(t, byID(d, "tenant-oldest").First().HasClass("age--stale"), "3h old is past 1h")
		assert.True(t, byID(d, "kpi-oldest").HasClass("kpi--danger"))
		d = b.Do(t, c, "GET", "/?stale=4h", nil, nil).Doc(t)
		assert.False(t, byID(d, "tenant-oldest").First().HasClass("age--stale"))
		assert.Equal(t, "4h", byID(d, "stale-select").Find("option[selected]").AttrOr("value", ""))
	})

	t.Run("SevenDays", func(t *testing.T) {
		d := b.Do(t, c, "GET", "/?span=7d", nil, nil).Doc(t)
		chart := byID(d, "arrival-chart")
		assert.Equal(t, 168, chart.Find(`[data-testid="chart-bar"]`).Length())
		assert.Equal(t, "5", chart.AttrOr("data-total", ""))
		assert.Equal(t, "true", byID(d, "span-7d").AttrOr("aria-current", ""))
	})

	t.Run("InvalidParameters", func(t *testing.T) {
		resp := b.Do(t, c, "GET", "/?span=1y&stale=forever", nil, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.Status)
		d := resp.Doc(t)
		assert.Equal(t, 2, byID(d, "flash").Length())
		assert.Equal(t, 24, byID(d, "chart-bar").Length(), "the defaults are shown")
	})

	t.Run("OnlyOwnTenants", func(t *testing.T) {
		acmeOnly, _ := b.SignIn(t, "acme:viewer")
		resp := b.Do(t, acmeOnly, "GET", "/", nil, nil)
		d := resp.Doc(t)
		assert.Equal(t, 1, byID(d, "tenant-row").Length())
		assert.NotContains(t, resp.Body, "globex")
		assert.NotContains(t, resp.Body, "dial tcp")
	})

	t.Run("EmptyTenant", func(t *testing.T) {
		initech, _ := b.SignIn(t, "initech:oncall")
		d := b.Do(t, initech, "GET", "/", nil, nil).Doc(t)
		require.Equal(t, 1, byID(d, "tenant-row").Length())
		assert.Equal(t, "0", text(byID(d, "tenant-unresolved")))
		assert.GreaterOrEqual(t, byID(d, "empty-state").Length(), 1)
	})

	t.Run("HomeWithoutDeadLetters", func(t *testing.T) {
		admin, _ := b.SignIn(t, "*:admin")
		d := b.Do(t, admin, "GET", "/", nil, nil).Doc(t)
		assert.Zero(t, byID(d, "dashboard").Length())
		assert.Equal(t, 1, byID(d, "home").Length(), "an admin keeps the home page")
		assert.Zero(t, byID(d, "nav-deadletters").Length())
	})
}

func TestDashboardAfterFill(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	fillSmall(t, b, 5000)
	c, _ := b.SignIn(t, "*:viewer")
	d := b.Do(t, c, "GET", "/", nil, nil).Doc(t)
	var want struct{ unresolved, total, day int64 }
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE dead_letter_unresolved(status)), count(*),
        count(*) FILTER (WHERE dead_lettered_at >= date_trunc('minute', now()) - interval '1439 minutes')
        FROM dead_letters`).Scan(&want.unresolved, &want.total, &want.day))
	kpi := text(byID(d, "kpi-unresolved"))
	assert.Contains(t, kpi, fmtCount(want.unresolved))
	assert.Contains(t, kpi, fmtCount(want.total))
	assert.Contains(t, text(byID(d, "kpi-day")), fmtCount(want.day))
}

func fmtCount(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
