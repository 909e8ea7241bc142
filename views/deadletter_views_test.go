package views_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

func triagePage(title, active string) views.Page {
	p := page(title, active)
	p.User.Nav = views.Nav{Dashboard: true, DeadLetters: true, Groups: true, Audit: true}
	return p
}

// sampleDashboard is a dashboard of three tenants with an incident going on.
func sampleDashboard() views.DashboardModel {
	m := views.DashboardModel{
		Now: now, StaleAfter: time.Hour, StaleValue: "1h", SpanValue: "24h", Action: "/",
		StaleOptions: []views.Option{{Value: "15m", Label: "15 minutes"}, {Value: "1h", Label: "1 hour"}, {Value: "4h", Label: "4 hours"}},
		SpanURLs:     map[string]string{"24h": "/?span=24h&stale=1h", "7d": "/?span=7d&stale=1h"},
		Tenants: []views.TenantSummaryRow{
			{Tenant: "acme", Unresolved: 12408, Total: 294621, Oldest: now.Add(-26 * time.Hour), Stale: true, LastHour: 312, LastDay: 4120, ListURL: "/deadletters?tenant=acme&status=unresolved"},
			{Tenant: "globex", Unresolved: 1873, Total: 393424, Oldest: now.Add(-47 * time.Minute), LastHour: 96, LastDay: 1710, ListURL: "/deadletters?tenant=globex&status=unresolved"},
			{Tenant: "initech", Unresolved: 0, Total: 311955, ListURL: "/deadletters?tenant=initech&status=unresolved"},
		},
		Chart: views.ArrivalChart{Title: "Arrivals per hour (UTC), last 24 hours"},
		ByItemType: []views.DimensionRow{
			{Value: "inventory.reserve", Unresolved: 6021, Total: 96120, Share: 1, URL: "/deadletters?type=inventory.reserve"},
			{Value: "email.send", Unresolved: 3100, Total: 40012, Share: 0.51, URL: "/deadletters?type=email.send"},
			{Value: "orders.refund", Unresolved: 1220, Total: 20013, Share: 0.2, URL: "/deadletters?type=orders.refund"},
			{Value: "accounts.permission_grant", Unresolved: 88, Total: 9001, Share: 0.014, URL: "/deadletters?type=accounts.permission_grant"},
		},
		ByErrorClass: []views.DimensionRow{
			{Value: "transient", Unresolved: 7020, Total: 99000, Share: 1, URL: "/deadletters?class=transient"},
			{Value: "unknown_effect", Unresolved: 4100, Total: 21000, Share: 0.58, URL: "/deadletters?class=unknown_effect"},
			{Value: "schema_invalid", Unresolved: 2100, Total: 23000, Share: 0.3, URL: "/deadletters?class=schema_invalid"},
		},
		TopGroups: sampleGroups()[:3],
	}
	for i := range 24 {
		n := int64(40 + (i*37)%90)
		if i >= 21 {
			n = int64(300 + i*10)
		}
		if i == 5 {
			n = 0
		}
		m.Chart.Bars = append(m.Chart.Bars, views.ChartBar{Start: now.Truncate(time.Hour).Add(time.Duration(i-23) * time.Hour), N: n})
		m.Chart.Total += n
		m.Chart.Max = max(m.Chart.Max, n)
	}
	m.Total = views.TenantSummaryRow{Unresolved: 14281, Total: 1000000, Oldest: now.Add(-26 * time.Hour), Stale: true, LastHour: 408, LastDay: 5830, ListURL: "/deadletters?status=unresolved"}
	return m
}

func sampleGroups() []views.GroupRow {
	stack := "github.com/acme/payments/internal/client.(*Client).Send(0xc000123456, 0xc000abcdef)\n\t/src/internal/client/client.go:212\ngithub.com/acme/payments/internal/client.(*Client).dispatch(...)\n\t/src/internal/client/dispatch.go:88"
	return []views.GroupRow{
		{Fingerprint: "9f2c4e0a7b1d3c5e8f6a2b4c", ErrorClass: "transient", N: 71337, Unresolved: 6021, FirstSeen: now.Add(-29 * 24 * time.Hour), LastSeen: now.Add(-2 * time.Minute),
			Tenants: []string{"acme"}, ItemTypes: []string{"inventory.reserve"}, SampleError: "inventory: context deadline exceeded after 30s", StackHead: stack,
			ListURL: "/deadletters?group=9f2c4e0a7b1d3c5e8f6a2b4c", SampleURL: "/deadletters/991"},
		{Fingerprint: "1a2b3c4d5e6f7a8b9c0d1e2f", ErrorClass: "unknown_effect", N: 12894, Unresolved: 4100, FirstSeen: now.Add(-20 * 24 * time.Hour), LastSeen: now.Add(-40 * time.Minute),
			Tenants: []string{"acme", "globex"}, ItemTypes: []string{"orders.cancel", "orders.refund"}, SampleError: "refund ord-77812: payment gateway timed out after 30s; refund state unknown", StackHead: stack,
			ListURL: "/deadletters?group=1a2b3c4d5e6f7a8b9c0d1e2f", SampleURL: "/deadletters/992"},
		{Fingerprint: "0f0e0d0c0b0a090807060504", ErrorClass: "schema_invalid", N: 5799, Unresolved: 210, FirstSeen: now.Add(-3 * 24 * time.Hour), LastSeen: now.Add(-5 * time.Hour),
			Tenants: []string{"globex", "initech"}, ItemTypes: []string{"email.send"}, SampleError: `validate mailer: value "<script>alert(1)</script>" is not a valid currency`, StackHead: stack,
			ListURL: "/deadletters?group=0f0e0d0c0b0a090807060504", SampleURL: "/deadletters/993"},
		{Fingerprint: "aabbccddeeff001122334455", ErrorClass: "permanent", N: 42, Unresolved: 0, FirstSeen: now.Add(-6 * time.Hour), LastSeen: now.Add(-6 * time.Hour),
			Tenants: []string{"initech"}, ItemTypes: []string{"webhooks.deliver"}, SampleError: "", ListURL: "/deadletters?group=aabbccddeeff001122334455"},
	}
}

func sampleList() views.DeadLetterListModel {
	m := views.DeadLetterListModel{
		Action: "/deadletters", Filter: views.DeadLetterFilter{Tenant: "acme", Status: "unresolved"},
		Tenants: []string{"acme", "globex", "initech"}, ItemTypes: []string{"email.send", "orders.refund", "search.index_update"},
		ErrorClasses: []string{"permanent", "transient", "unknown_effect"},
		Statuses:     []views.Option{{Value: "unresolved", Label: "unresolved (any)"}, {Value: "quarantined", Label: "quarantined"}},
		Counted:      true, Count: 10000, CountCapped: true, Now: now,
		NextURL: "/deadletters?tenant=acme&before=abc", PrevURL: "/deadletters?tenant=acme&after=def",
	}
	types := []string{"orders.refund", "email.send", "inventory.reserve", "search.index_update", "accounts.permission_grant"}
	classes := []string{"unknown_effect", "permanent", "transient", "stale_version", "policy", "schema_invalid"}
	errs := []string{
		"refund ord-%d: payment gateway timed out after 30s; refund state unknown",
		"smtp: 550 5.1.1 <customer%d@example.com>: recipient address rejected",
		"inventory: context deadline exceeded after 30s (reserve %d)",
		"index products: version conflict for doc sku-%d (have 12, got 9)",
		"grant billing:admin to acct-%d: principal user:7 lacks accounts:grant",
		"decode mailer: unexpected end of JSON input at offset %d",
	}
	statuses := []string{"quarantined", "quarantined", "replay_failed", "quarantined", "replaying", "quarantined"}
	for i := range 50 {
		m.Rows = append(m.Rows, views.DeadLetterRow{
			ID: int64(884213 - i), URL: fmt.Sprintf("/deadletters/%d", 884213-i), Tenant: "acme", ItemType: types[i%len(types)],
			MsgID: fmt.Sprintf("%s-%06x-%d", strings.ReplaceAll(types[i%len(types)], ".", "-"), 0x3fa9c1+i*977, 1000000+i),
			Error: fmt.Sprintf(errs[i%len(errs)], 10000+i*37), ErrorClass: classes[i%len(classes)], Status: statuses[i%len(statuses)],
			Attempts: fmt.Sprint(1 + i%7), At: now.Add(-time.Duration(i*i+3) * time.Minute), PayloadSize: int64(120 + (i*311)%4000), Malformed: i%17 == 3,
		})
	}
	m.Rows[2].PayloadSize = 270000
	return m
}

func sampleDetail() views.DeadLetterDetailModel {
	payload := "{\n  \"order_id\": \"ord-77812\",\n  \"amount_cents\": 12900,\n  \"currency\": \"EUR\",\n  \"reason\": \"damaged in transit\",\n  \"lines\": [\n    {\n      \"sku\": \"sku-1182\",\n      \"qty\": 2\n    }\n  ]\n}"
	return views.DeadLetterDetailModel{
		ID: 884213, Tenant: "acme", ItemType: "orders.refund", Status: "quarantined", Version: 1,
		PolicyClass: "manual", PolicyRule: "orders.refund",
		PolicyText: "manual: irreversible or destructive, or an item type no rule matches. It needs two distinct approvers, neither of them the requester; an approval covers exactly one request and expires after 4h; one item per request, no bulk; it publishes 1 message per second by default, at most 10 messages per second.",
		Subject:    "dlq.acme.orders.refund", OriginalSubject: "app.acme.orders.refund", SourceKind: "dlq", SourceStream: "DLQ", SourceSeq: 1884213,
		MsgID: "orders-refund-3fa9c1-1000000", OperationID: "op_2Qm9x8YkP3e", CorrelationID: "req-7c1e9a02", Principal: "user:42", Consumer: "payments-worker",
		Error: "refund ord-77812: payment gateway timed out after 30s; refund state unknown", ErrorClass: "unknown_effect", Attempts: "4",
		FirstFailedAt: now.Add(-52 * time.Minute), LastFailedAt: now.Add(-49 * time.Minute), DeadLetteredAt: now.Add(-49 * time.Minute),
		ReceivedAt: now.Add(-49 * time.Minute), UpdatedAt: now.Add(-49 * time.Minute),
		Stack: "goroutine 118 [running]:\ngithub.com/acme/payments/internal/client.(*Client).Refund(0xc000123456, {0x1a2b3c, 0xc000abcdef})\n\t/src/internal/client/refund.go:212 +0x1d4\ngithub.com/acme/payments/internal/worker.(*Worker).handle(0xc0001a2000)\n\t/src/internal/worker/worker.go:88 +0x2f1\ncreated by github.com/acme/payments/internal/consumer.Start in goroutine 1\n\t/src/internal/consumer/start.go:41 +0x9c",
		Headers: []views.HeaderRow{
			{Name: "Content-Type", Value: "application/json"}, {Name: "Dlq-Attempts", Value: "4"}, {Name: "Dlq-Consumer", Value: "payments-worker"},
			{Name: "Dlq-Error", Value: "refund ord-77812: payment gateway timed out after 30s; refund state unknown"}, {Name: "Dlq-Error-Class", Value: "unknown_effect"},
			{Name: "Dlq-Original-Msg-Id", Value: "orders-refund-3fa9c1-1000000"}, {Name: "X-Raw", Value: "/w7/AA==", Binary: true},
		},
		Payload:     views.PayloadView{Kind: views.PayloadJSON, Text: payload, Size: int64(len(payload)), Shown: int64(len(payload)), SHA256: strings.Repeat("9f2c", 16), DownloadURL: "/deadletters/884213/payload"},
		Fingerprint: "1a2b3c4d5e6f7a8b9c0d1e2f", GroupURL: "/deadletters?group=1a2b3c4d5e6f7a8b9c0d1e2f", ListURL: "/deadletters", Now: now,
		Audit: []views.AuditRow{
			{Seq: 18001, At: now.Add(-30 * time.Minute), Actor: "dana@example.com", Tenant: "acme", Action: "replay.request", Outcome: "ok", Reason: "gateway back; replaying the refund", URL: "/audit/18001"},
			{Seq: 18007, At: now.Add(-20 * time.Minute), Actor: "lee@example.com", Tenant: "acme", Action: "replay.approve", Outcome: "denied", Reason: "approver is requester"},
		},
	}
}

func TestDashboardView(t *testing.T) {
	t.Parallel()
	doc, html := render(t, views.Dashboard(triagePage("Dashboard", "dashboard"), sampleDashboard()))
	assertNoInjection(t, doc, html)
	rows := byTestID(doc, "tenant-row")
	require.Equal(t, 3, rows.Length())
	assert.Equal(t, "12,408", rows.Eq(0).Find(`[data-testid="tenant-unresolved"]`).Text())
	assert.True(t, rows.Eq(0).Find(`[data-testid="tenant-oldest"]`).HasClass("age--stale"))
	assert.False(t, rows.Eq(1).Find(`[data-testid="tenant-oldest"]`).HasClass("age--stale"))
	assert.Zero(t, rows.Eq(2).Find(`[data-testid="tenant-oldest"]`).Length(), "nothing unresolved: a dash")
	chart := byTestID(doc, "arrival-chart")
	assert.Equal(t, 24, chart.Find("rect.chart__bar").Length())
	assert.Equal(t, 1, chart.Find("rect.chart__bar--zero").Length())
	assert.Contains(t, chart.Find("rect.chart__bar").Eq(0).Find("title").Text(), "arrived")
	assert.Equal(t, "/?span=7d&stale=1h", byTestID(doc, "span-7d").AttrOr("href", ""))
	assert.Equal(t, "every 30s", byTestID(doc, "dashboard").AttrOr("hx-trigger", ""))
	assert.Equal(t, 4, byTestID(doc, "by-type").Find(`[data-testid="dim-row"]`).Length())
	assert.Equal(t, 3, byTestID(doc, "group-row").Length())
	assert.True(t, byTestID(doc, "kpi-oldest").HasClass("kpi--danger"))
}

func TestDashboardViewHostile(t *testing.T) {
	t.Parallel()
	m := sampleDashboard()
	m.Tenants[0].Tenant, m.Tenants[0].ListURL = hostile, jsURL
	m.ByItemType[0].Value, m.ByItemType[0].URL = hostile, jsURL
	m.TopGroups[0].SampleError, m.TopGroups[0].ListURL = hostile, jsURL
	m.Chart.Title = hostile
	m.SpanURLs = map[string]string{"24h": jsURL, "7d": jsURL}
	m.StaleOptions = []views.Option{{Value: attrBreak, Label: hostile}}
	doc, html := render(t, views.Dashboard(triagePage("Dashboard", "dashboard"), m))
	assertNoInjection(t, doc, html)
	assert.Contains(t, byTestID(doc, "tenant-row").Eq(0).Text(), scriptTag+attrBreak)
	assert.Equal(t, sanitizedURL, byTestID(doc, "tenant-row").Eq(0).Find("a").AttrOr("href", ""))
	assert.Equal(t, sanitizedURL, byTestID(doc, "span-7d").AttrOr("href", ""))
	assert.Equal(t, sanitizedURL, byTestID(doc, "dashboard").AttrOr("hx-get", ""))
}

func TestDeadLetterListView(t *testing.T) {
	t.Parallel()

	t.Run("Rows", func(t *testing.T) {
		t.Parallel()
		m := sampleList()
		m.BulkActions = views.DeadLetterBulkActions(views.BulkActionsModel{CanReplay: true})
		doc, html := render(t, views.DeadLetterList(triagePage("Dead letters", "deadletters"), m))
		assertNoInjection(t, doc, html)
		rows := byTestID(doc, "deadletter-row")
		require.Equal(t, 50, rows.Length())
		assert.Equal(t, "884213", rows.Eq(0).AttrOr("data-id", ""))
		assert.Equal(t, "/deadletters/884213", rows.Eq(0).Find(`[data-testid="row-link"]`).AttrOr("href", ""))
		assert.Equal(t, "884213", rows.Eq(0).Find(`input[type="checkbox"]`).AttrOr("value", ""))
		assert.Equal(t, views.SelectionFormID, rows.Eq(0).Find(`input[type="checkbox"]`).AttrOr("form", ""))
		assert.Equal(t, "10,000+ dead letters", strings.TrimSpace(byTestID(doc, "deadletter-count").Text()))
		assert.Equal(t, "263.7 KB", strings.TrimSpace(rows.Eq(2).Find(`[data-label="Size"]`).Text()))
		assert.Equal(t, 1, byTestID(doc, "pager-next").Length())
		assert.Equal(t, "#results", byTestID(doc, "deadletter-filter").AttrOr("hx-target", ""))
		assert.Equal(t, "true", byTestID(doc, "deadletter-filter").AttrOr("hx-push-url", ""))
		assert.Equal(t, "unresolved", doc.Find(`select[name="status"] option[selected]`).AttrOr("value", ""))
	})

	t.Run("BulkSlot", func(t *testing.T) {
		t.Parallel()
		m := sampleList()
		m.BulkActions = templ.Raw(`<form id="deadletter-selection" data-testid="bulk-form"></form>`)
		doc, _ := render(t, views.DeadLetterList(triagePage("Dead letters", "deadletters"), m))
		assert.Equal(t, 1, byTestID(doc, "list-actions").Find(`[data-testid="bulk-form"]`).Length())
	})

	t.Run("CountLater", func(t *testing.T) {
		t.Parallel()
		m := sampleList()
		m.Counted, m.CountURL, m.CountNowURL = false, "/deadletters/count?q=timeout", "/deadletters?q=timeout&count=1"
		doc, _ := render(t, views.DeadLetterList(triagePage("Dead letters", "deadletters"), m))
		c := byTestID(doc, "deadletter-count")
		assert.Equal(t, "/deadletters/count?q=timeout", c.AttrOr("hx-get", ""))
		assert.Contains(t, c.Text(), "50+ dead letters")
	})

	t.Run("Hostile", func(t *testing.T) {
		t.Parallel()
		m := sampleList()
		m.Action = jsURL
		m.Filter = views.DeadLetterFilter{Q: attrBreak, Tenant: hostile, ItemType: hostile, Subject: hostile, MsgID: hostile, Group: attrBreak}
		m.GroupLabel, m.ClearGroupURL = hostile, jsURL
		m.Rows[0].Error, m.Rows[0].MsgID, m.Rows[0].ItemType, m.Rows[0].Tenant, m.Rows[0].URL = hostile, hostile, hostile, hostile, jsURL
		m.Rows[0].ErrorClass, m.Rows[0].Status = hostile, hostile
		m.NextURL, m.PrevURL, m.CountURL = jsURL, jsURL, jsURL
		doc, html := render(t, views.DeadLetterList(triagePage("Dead letters", "deadletters"), m))
		assertNoInjection(t, doc, html)
		row := byTestID(doc, "deadletter-row").Eq(0)
		assert.Contains(t, row.Find(`[data-testid="row-link"]`).Text(), scriptTag+attrBreak)
		assert.Equal(t, sanitizedURL, row.Find(`[data-testid="row-link"]`).AttrOr("href", ""))
		assert.Equal(t, sanitizedURL, byTestID(doc, "group-filter-clear").AttrOr("href", ""))
		assert.Equal(t, attrBreak, doc.Find(`input[name="q"]`).AttrOr("value", ""))
		assert.Equal(t, attrBreak, doc.Find(`input[name="group"]`).AttrOr("value", ""))
	})

	// A filter of several tenants (a group row's list) shows them, as they
	// read, in place of the Tenant select that cannot show a set, and
	// sends each back as it is: the form sent as drawn keeps the scope
	// (TestRevOncall23GroupListFormWidensToTheSnoozedTenant).
	t.Run("SeveralTenants", func(t *testing.T) {
		t.Parallel()
		m := sampleList()
		rlo := "globex\u202e"
		m.Filter = views.DeadLetterFilter{Tenants: []string{rlo, "initech", hostile}, Group: "0f0e0d0c0b0a090807060504"}
		m.AnyTenantURL = "/deadletters?group=0f0e0d0c0b0a090807060504"
		doc, html := render(t, views.DeadLetterList(triagePage("Error group", "groups"), m))
		assertNoInjection(t, doc, html)
		form := byTestID(doc, "deadletter-filter")
		assert.Zero(t, form.Find(`select[name="tenant"]`).Length(), "no select that shows Any tenant")
		var sent []string
		form.Find(`input[type="hidden"][name="tenant"]`).Each(func(_ int, s *goquery.Selection) { sent = append(sent, s.AttrOr("value", "")) })
		assert.Equal(t, []string{rlo, "initech", hostile}, sent, "each tenant sent back as it is")
		names := byTestID(doc, "filter-tenants-names")
		assert.Equal(t, "in "+views.Shown(rlo)+", initech, "+views.Shown(hostile), names.Text())
		assert.Equal(t, 3, names.Find(`bdi:not(.uc)`).Length(), "each tenant isolated")
		assert.Equal(t, "<U+202E>", names.Find(`bdi.uc`).First().Text(), "the override is a marker")
		assert.Equal(t, "/deadletters?group=0f0e0d0c0b0a090807060504", byTestID(doc, "filter-tenants-clear").AttrOr("href", ""))

		m.Errors = map[string]string{"tenant": "Choose one of your tenants."}
		doc, _ = render(t, views.DeadLetterList(triagePage("Error group", "groups"), m))
		assert.Equal(t, "Choose one of your tenants.", strings.TrimSpace(byTestID(doc, "filter-tenants").Find(`[data-testid="field-error-tenant"]`).Text()))

		m = sampleList()
		m.Filter = views.DeadLetterFilter{Tenant: "globex"}
		doc, _ = render(t, views.DeadLetterList(triagePage("Dead letters", "deadletters"), m))
		assert.Equal(t, "globex", doc.Find(`select[name="tenant"] option[selected]`).AttrOr("value", ""), "one tenant keeps the select")
		assert.Zero(t, byTestID(doc, "filter-tenants").Length())
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		m := sampleList()
		m.Rows, m.NextURL, m.PrevURL, m.Count, m.CountCapped = nil, "", "", 0, false
		doc, _ := render(t, views.DeadLetterList(triagePage("Dead letters", "deadletters"), m))
		assert.Equal(t, 1, byTestID(doc, "empty-state").Length())
		assert.Zero(t, byTestID(doc, "pager").Length())
		assert.Equal(t, "0 dead letters", strings.TrimSpace(byTestID(doc, "deadletter-count").Text()))
	})
}

func TestGroupListView(t *testing.T) {
	t.Parallel()
	m := views.GroupListModel{
		Action: "/groups", Filter: views.GroupFilter{State: "unresolved", Sort: "unresolved"}, Tenants: []string{"acme"},
		Sorts: []views.Option{{Value: "unresolved", Label: "Most unresolved"}}, States: []views.Option{{Value: "unresolved", Label: "With unresolved"}},
		Rows: sampleGroups(), Total: 539, Now: now,
	}
	doc, html := render(t, views.GroupList(triagePage("Error groups", "groups"), m))
	assertNoInjection(t, doc, html)
	assert.Equal(t, "1–4 of 539 groups", strings.Join(strings.Fields(byTestID(doc, "group-count").Text()), " "))
	rows := byTestID(doc, "group-row")
	require.Equal(t, 4, rows.Length())
	assert.Equal(t, "71,337", rows.Eq(0).Find(`[data-testid="group-total"]`).Text())
	assert.Equal(t, "acme, globex", rows.Eq(1).Find(`[data-testid="group-tenants"]`).Text())
	assert.Contains(t, rows.Eq(2).Find(`[data-testid="group-link"]`).Text(), scriptTag, "text, not markup")
	assert.Contains(t, rows.Eq(3).Text(), "sample no longer stored")
	assert.Equal(t, "pre", goquery.NodeName(rows.Eq(0).Find(`[data-testid="group-stack"]`)))

	m.Rows[0].SampleError, m.Rows[0].StackHead, m.Rows[0].ListURL, m.Rows[0].Tenants = hostile, hostile, jsURL, []string{hostile}
	doc, html = render(t, views.GroupList(triagePage("Error groups", "groups"), m))
	assertNoInjection(t, doc, html)
	assert.Equal(t, sanitizedURL, byTestID(doc, "group-link").Eq(0).AttrOr("href", ""))
}

func TestDeadLetterShowView(t *testing.T) {
	t.Parallel()

	t.Run("Fields", func(t *testing.T) {
		t.Parallel()
		doc, html := render(t, views.DeadLetterShow(triagePage("Dead letter", "deadletters"), sampleDetail()))
		assertNoInjection(t, doc, html)
		assert.Equal(t, "orders.refund", byTestID(doc, "dl-type").Text())
		assert.Equal(t, "manual", byTestID(doc, "dl-policy-class").Text())
		assert.Contains(t, byTestID(doc, "dl-policy-text").Text(), "two distinct approvers")
		assert.Equal(t, 1, byTestID(doc, "dl-summary").Find(`button[data-copy="orders-refund-3fa9c1-1000000"]`).Length())
		assert.Equal(t, "pre", goquery.NodeName(byTestID(doc, "dl-stack")))
		assert.Equal(t, 7, byTestID(doc, "dl-header").Length())
		assert.Equal(t, "/deadletters/884213/payload", byTestID(doc, "dl-download").AttrOr("href", ""))
		assert.Equal(t, 2, byTestID(doc, "dl-audit-row").Length())
		assert.Zero(t, byTestID(doc, "replay-panel").Length(), "no actions unless given")
	})

	t.Run("ReplayPanelSlot", func(t *testing.T) {
		t.Parallel()
		m := sampleDetail()
		m.ReplayPanel = templ.Raw(`<form data-testid="lead-panel"></form>`)
		doc, _ := render(t, views.DeadLetterShow(triagePage("Dead letter", "deadletters"), m))
		assert.Equal(t, 1, byTestID(doc, "replay-panel").Find(`[data-testid="lead-panel"]`).Length())
	})

	t.Run("TruncatedWithoutDownload", func(t *testing.T) {
		t.Parallel()
		m := sampleDetail()
		m.Payload = views.NewPayloadView([]byte(strings.Repeat("a", 100)), 5000, false)
		doc, _ := render(t, views.DeadLetterShow(triagePage("Dead letter", "deadletters"), m))
		assert.Contains(t, byTestID(doc, "dl-truncated").Text(), "Your role does not allow downloading payloads.")
		assert.Zero(t, byTestID(doc, "dl-download").Length())
	})

	t.Run("Hostile", func(t *testing.T) {
		t.Parallel()
		m := sampleDetail()
		m.Tenant, m.ItemType, m.Error, m.Stack, m.MsgID, m.OperationID = hostile, hostile, hostile, hostile, attrBreak, hostile
		m.OriginalSubject, m.Principal, m.CorrelationID = jsURL, jsURL, hostile
		m.Headers = []views.HeaderRow{{Name: hostile, Value: hostile}}
		m.Payload = views.NewPayloadView([]byte(hostile), int64(len(hostile)), false)
		m.Payload.DownloadURL = jsURL
		m.GroupURL, m.ListURL = jsURL, jsURL
		m.MalformedReasons, m.Malformed = []string{hostile}, true
		m.Audit[0].Reason, m.Audit[0].URL = hostile, jsURL
		doc, html := render(t, views.DeadLetterShow(triagePage("Dead letter", "deadletters"), m))
		assertNoInjection(t, doc, html)
		assert.Contains(t, byTestID(doc, "dl-error").Text(), scriptTag+attrBreak)
		assert.Equal(t, "binary", byTestID(doc, "dl-payload").AttrOr("data-kind", ""), "invalid UTF-8: a hex dump")
		assert.Equal(t, sanitizedURL, byTestID(doc, "dl-download").AttrOr("href", ""))
		assert.Equal(t, sanitizedURL, byTestID(doc, "dl-group-link").AttrOr("href", ""))
		assert.Zero(t, doc.Find(`a[href^="javascript"]`).Length())
		assert.Contains(t, byTestID(doc, "dl-summary").Text(), jsURL, "a javascript: subject is text")
		assert.Contains(t, byTestID(doc, "dl-malformed").Text(), scriptTag)
	})
}

func TestPayloadView(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		data        []byte
		size        int64
		unavailable bool
		kind, text  string
	}{
		{"JSON", []byte(`{"a":[1,2]}`), 11, false, views.PayloadJSON, "{\n  \"a\": [\n    1,\n    2\n  ]\n}"},
		{"TruncatedJSONIsText", []byte(`{"a":[1,2`), 100, false, views.PayloadText, `{"a":[1,2`},
		{"BrokenJSONIsText", []byte(`{"a":`), 5, false, views.PayloadText, `{"a":`},
		{"Text", []byte("héllo\tworld\r\n"), 14, false, views.PayloadText, "héllo\tworld\r\n"},
		{"CutRuneAtTheEnd", []byte("ab\xc3"), 10, false, views.PayloadText, "ab"},
		{"InvalidUTF8", []byte("ab\xffcd"), 5, false, views.PayloadBinary, "00000000  61 62 ff 63 64                                    |ab.cd|"},
		{"ControlCharacters", []byte("a\x00b"), 3, false, views.PayloadBinary, "00000000  61 00 62                                          |a.b|"},
		{"Empty", []byte{}, 0, false, views.PayloadEmpty, ""},
		{"Unavailable", nil, 0, true, views.PayloadUnavailable, ""},
	} {
		v := views.NewPayloadView(tc.data, tc.size, tc.unavailable)
		assert.Equal(t, tc.kind, v.Kind, tc.name)
		assert.Equal(t, tc.text, v.Text, tc.name)
		assert.Equal(t, int64(len(tc.data)) < tc.size, v.Truncated, tc.name)
	}
	dump := views.HexDump([]byte("0123456789abcdefXYZ"))
	assert.Equal(t, "00000000  30 31 32 33 34 35 36 37  38 39 61 62 63 64 65 66  |0123456789abcdef|\n"+
		"00000010  58 59 5a                                          |XYZ|", dump)
}

func TestTriageFormatting(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "0", views.Count(0))
	assert.Equal(t, "999", views.Count(999))
	assert.Equal(t, "1,000", views.Count(1000))
	assert.Equal(t, "10,000,000", views.Count(10_000_000))
	assert.Equal(t, "-1,234", views.Count(-1234))
	assert.Equal(t, "10,000+", views.CappedCount(10000, true))
	assert.Equal(t, "0 B", views.Bytes(0))
	assert.Equal(t, "1023 B", views.Bytes(1023))
	assert.Equal(t, "64.0 KB", views.Bytes(64<<10))
	assert.Equal(t, "2.5 MB", views.Bytes(5<<19))
	assert.Equal(t, "first …", views.FirstLine("first\nsecond", 80))
	assert.Equal(t, "abcd…", views.FirstLine("abcdefgh", 5))
	assert.Equal(t, "replay failed", views.Label("replay_failed"))
	assert.Equal(t, views.BadgeDanger, views.ClassKind("unknown_effect"))
	assert.Equal(t, views.BadgeWarn, views.StatusKind("quarantined"))
	assert.Equal(t, views.BadgeNeutral, views.ClassKind(hostile))
}
