package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// browserGET is the query a browser sends for form f as drawn (nothing
// changed): every named input with its value, every select with its
// selected option (or its first).
func browserGET(f *goquery.Selection) url.Values {
	q := url.Values{}
	f.Find("input[name]").Each(func(_ int, s *goquery.Selection) {
		switch s.AttrOr("type", "text") {
		case "checkbox", "radio":
			if _, ok := s.Attr("checked"); !ok {
				return
			}
		case "submit", "button":
			return
		}
		q.Add(s.AttrOr("name", ""), s.AttrOr("value", ""))
	})
	f.Find("select[name]").Each(func(_ int, s *goquery.Selection) {
		opt := s.Find("option[selected]").First()
		if opt.Length() == 0 {
			opt = s.Find("option").First()
		}
		q.Add(s.AttrOr("name", ""), opt.AttrOr("value", strings.TrimSpace(opt.Text())))
	})
	return q
}

// TestRevOncall23GroupListFormWidensToTheSnoozedTenant: severity low.
// A group row lists, and counts, the group's dead letters in the tenants
// where it is not snoozed (g.Tenants); its link to them (group-link,
// groupListURL) names those tenants as several tenant values, which the
// list reads as a narrower scope (TestFixOncall13FilterTakesSeveralTenants).
// But the list's filter form cannot hold several tenants: its Tenant
// select shows "Any tenant" (the form keeps the group as a hidden input,
// not the tenants), so the page misstates its own scope, and the form as
// drawn, sent as it is (Apply, or any field changed: the form sends itself
// as one types), drops the narrowing: the list, and its "all matching"
// actions, now take the dead letters of the tenant where the group is
// snoozed, which the row left out. Here the group has a dead letter in
// each of acme (snoozed there), globex and initech; the row says 2 (globex,
// initech), its list shows 2, and Apply on that list, nothing changed,
// shows 3: acme's too. (A row of one tenant is not affected: the select
// shows that tenant.)
//
// Expected: the list's form keeps the scope it was opened with (hidden
// tenant inputs, or the select showing the several tenants), so that
// submitting it as drawn lists what it listed.
func TestRevOncall23GroupListFormWidensToTheSnoozedTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall", "globex:oncall", "initech:oncall")
	for _, tenant := range []string{"acme", "globex", "initech"} {
		testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update",
			MsgID: "rev23d-scope-" + tenant, Error: "index shard rev23d unavailable"})
	}
	fp, found := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`).First().Attr("data-fingerprint")
	require.True(t, found)
	snooze := b.Do(t, c, "POST", "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"4h"}, "return_to": {"/groups"}}, nil)
	require.Equal(t, http.StatusSeeOther, snooze.Status, snooze.Body)

	rows := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rows.Length())
	require.Equal(t, "2", strings.TrimSpace(rows.Find(`[data-testid="group-unresolved"]`).Text()), "the row counts globex's and initech's")
	link, ok := rows.Find(`[data-testid="group-link"]`).Attr("href")
	require.True(t, ok)

	resp := b.Do(t, c, "GET", link, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	require.Equal(t, 2, d.Find(`[data-testid="deadletter-row"]`).Length(), "precondition: the row's list shows its 2 (globex, initech)")

	form := d.Find(`form[data-testid="deadletter-filter"]`)
	require.Equal(t, 1, form.Length())
	action := form.AttrOr("action", "/deadletters")
	q := browserGET(form)
	again := b.Do(t, c, "GET", action+"?"+q.Encode(), nil, nil)
	require.Equal(t, http.StatusOK, again.Status, again.Body)
	assert.Equal(t, 2, again.Doc(t).Find(`[data-testid="deadletter-row"]`).Length(),
		"the list opened from the group row, its filter form sent as drawn (%s), lists the snoozed tenant's dead letters too", q.Encode())
}
