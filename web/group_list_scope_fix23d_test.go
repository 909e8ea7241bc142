package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// tenantsOf are the tenant values of link (a path with a query), sorted.
func tenantsOf(t *testing.T, link string) []string {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err, link)
	return slices.Sorted(slices.Values(u.Query()["tenant"]))
}

// countNow is the list's "count them" link, which is in a <noscript>
// (text to a parser that runs scripts).
func countNow(t *testing.T, d *goquery.Document) string {
	t.Helper()
	inner, err := goquery.NewDocumentFromReader(strings.NewReader(d.Find(`[data-testid="deadletter-count"] noscript`).Text()))
	require.NoError(t, err)
	link, ok := inner.Find(`[data-testid="count-now"]`).Attr("href")
	require.True(t, ok, "count them")
	return link
}

// TestFixOncall23GroupListKeepsItsTenants: the list opened from a group
// row names the tenants where the group is not snoozed (globex, initech;
// snoozed in acme). Its form shows them in place of the Tenant select,
// sends each back as a hidden tenant value and offers a way back to any
// tenant; every link and form the page builds from its filter carries
// both (the pager, the count, the time presets, the group's Remove, the
// return_to of the bulk form, the group panel and the time zone form, "all
// matching" and its confirmation); the group panel is of those tenants, as the row's own
// triage line is (TestRevOncall23GroupListFormWidensToTheSnoozedTenant).
func TestFixOncall23GroupListKeepsItsTenants(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall", "globex:oncall", "initech:oncall")
	var letters []testfactory.Letter
	for _, n := range []struct {
		tenant string
		n      int
	}{{"acme", 3}, {"globex", 30}, {"initech", 30}} {
		for i := range n.n {
			letters = append(letters, testfactory.Letter{Tenant: n.tenant, ItemType: "search.index_update",
				MsgID: fmt.Sprintf("fix23d-keep-%s-%d", n.tenant, i), Error: "index shard fix23d unavailable"})
		}
	}
	testfactory.DeadLetters(t, b.Pool, letters...)
	fp, found := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`).First().Attr("data-fingerprint")
	require.True(t, found)
	snooze := b.Do(t, c, "POST", "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"4h"}, "return_to": {"/groups"}}, nil)
	require.Equal(t, http.StatusSeeOther, snooze.Status, snooze.Body)
	row := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, row.Length())
	require.Equal(t, "60", strings.TrimSpace(row.Find(`[data-testid="group-unresolved"]`).Text()))
	link := row.Find(`[data-testid="group-link"]`).AttrOr("href", "")
	want := []string{"globex", "initech"}
	require.Equal(t, want, tenantsOf(t, link))

	resp := b.Do(t, c, "GET", link, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	require.Equal(t, 50, d.Find(`[data-testid="deadletter-row"]`).Length())

	t.Run("FormShowsTheTenants", func(t *testing.T) {
		form := d.Find(`form[data-testid="deadletter-filter"]`)
		assert.Zero(t, form.Find(`select[name="tenant"]`).Length(), "no select showing Any tenant")
		names := strings.Join(strings.Fields(form.Find(`[data-testid="filter-tenants-names"]`).Text()), " ")
		assert.Equal(t, "in globex, initech", names)
		var sent []string
		form.Find(`input[type="hidden"][name="tenant"]`).Each(func(_ int, s *goquery.Selection) { sent = append(sent, s.AttrOr("value", "")) })
		assert.Equal(t, want, sent)
		assert.Equal(t, want, tenantsOf(t, "/deadletters?"+browserGET(form).Encode()), "the form as drawn")

		anyTenant := form.Find(`[data-testid="filter-tenants-clear"]`).AttrOr("href", "")
		u, err := url.Parse(anyTenant)
		require.NoError(t, err)
		assert.Equal(t, url.Values{"group": {fp}, "status": {"unresolved"}}, u.Query(), "the same filter in any tenant")
		wide := b.Do(t, c, "GET", anyTenant, nil, nil)
		require.Equal(t, http.StatusOK, wide.Status, wide.Body)
		wd := wide.Doc(t)
		assert.Equal(t, 1, wd.Find(`form[data-testid="deadletter-filter"] select[name="tenant"]`).Length(), "the select is back")
		counted := b.Do(t, c, "GET", countNow(t, wd), nil, nil)
		require.Equal(t, http.StatusOK, counted.Status, counted.Body)
		assert.Equal(t, "63 dead letters", strings.TrimSpace(counted.Doc(t).Find(`[data-testid="deadletter-count"]`).Text()), "acme's too, as asked")
	})

	t.Run("LinksCarryTheTenants", func(t *testing.T) {
		links := map[string]string{
			"pager-next":          d.Find(`[data-testid="pager-next"]`).AttrOr("href", ""),
			"group-filter-clear":  d.Find(`[data-testid="group-filter-clear"]`).AttrOr("href", ""),
			"bulk return_to":      d.Find(`form[data-testid="bulk-form"] input[name="return_to"]`).AttrOr("value", ""),
			"time zone return_to": d.Find(`form[data-testid="time-zone-form"] input[name="return_to"]`).AttrOr("value", ""),
		}
		count := d.Find(`[data-testid="deadletter-count"]`)
		if u, ok := count.Attr("hx-get"); ok {
			links["count"] = u
			links["count-now"] = countNow(t, d)
		}
		d.Find(`[data-testid="time-presets"] a`).Each(func(i int, s *goquery.Selection) {
			links[fmt.Sprintf("preset %d", i)] = s.AttrOr("href", "")
		})
		d.Find(`[data-testid="bulk-all"] form`).Each(func(i int, s *goquery.Selection) {
			links[fmt.Sprintf("all matching %d", i)] = s.AttrOr("action", "")
		})
		d.Find(`[data-testid="group-panel"] input[name="return_to"]`).Each(func(i int, s *goquery.Selection) {
			links[fmt.Sprintf("group panel return_to %d", i)] = s.AttrOr("value", "")
		})
		require.GreaterOrEqual(t, len(links), 9)
		for name, link := range links {
			require.NotEmpty(t, link, name)
			assert.Equal(t, want, tenantsOf(t, link), name)
		}

		next := b.Do(t, c, "GET", links["pager-next"], nil, nil)
		require.Equal(t, http.StatusOK, next.Status, next.Body)
		nd := next.Doc(t)
		assert.Equal(t, 10, nd.Find(`[data-testid="deadletter-row"]`).Length(), "the next page: the rest of globex's and initech's")
		assert.NotContains(t, nd.Find(`[data-testid="row-tenant"]`).Text(), "acme")
		assert.Equal(t, 2, nd.Find(`form[data-testid="deadletter-filter"] input[type="hidden"][name="tenant"]`).Length())

		discard := d.Find(`[data-testid="bulk-discard-filter"]`).Closest("form").AttrOr("action", "")
		confirm := b.Do(t, c, "POST", discard, nil, nil)
		require.Equal(t, http.StatusOK, confirm.Status, confirm.Body)
		cd := confirm.Doc(t)
		assert.Equal(t, 60, cd.Find(`form[data-testid="confirm-form"] input[type="hidden"][name="id"]`).Length(), "all matching: globex's and initech's, not acme's")
		back := cd.Find(`form[data-testid="confirm-form"] input[name="return_to"]`).AttrOr("value", "")
		assert.Equal(t, want, tenantsOf(t, back), "the confirmation's way back")
	})

	t.Run("PanelOfTheTenants", func(t *testing.T) {
		var panel []string
		d.Find(`[data-testid="group-panel-tenant"]`).Each(func(_ int, s *goquery.Selection) { panel = append(panel, s.AttrOr("data-tenant", "")) })
		assert.Equal(t, want, panel, "not acme, where the group is snoozed and the list lists nothing")
	})
}

// TestFixOncall23SeveralTenantsAreAFilter: a list narrowed to several
// tenants and nothing else is filtered: its "all matching" actions take
// what it lists, as those of a list narrowed to one tenant do, rather
// than being refused as unfiltered.
func TestFixOncall23SeveralTenantsAreAFilter(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall", "globex:oncall", "initech:oncall")
	for _, tenant := range []string{"acme", "globex", "initech"} {
		testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update",
			MsgID: "fix23d-filter-" + tenant, Error: "several tenants fix23d"})
	}
	d := b.Do(t, c, "GET", "/deadletters?tenant=globex&tenant=initech", nil, nil).Doc(t)
	require.Equal(t, 2, d.Find(`[data-testid="deadletter-row"]`).Length())
	action, ok := d.Find(`[data-testid="bulk-resolve-filter"]`).Closest("form").Attr("action")
	require.True(t, ok, "all matching is offered")
	confirm := b.Do(t, c, "POST", action, nil, nil)
	require.Equal(t, http.StatusOK, confirm.Status, confirm.Body)
	assert.Equal(t, 2, confirm.Doc(t).Find(`form input[type="hidden"][name="id"]`).Length())
}
