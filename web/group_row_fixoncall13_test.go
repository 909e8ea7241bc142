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

	"github.com/quarantine-console/quarantine/testfactory"
)

// fixOncall13Group makes one error group of 2 dead letters in acme and 2
// in globex, snoozed in acme, and returns its fingerprint.
func fixOncall13Group(t *testing.T, b *testfactory.Console, c *http.Client, name string) string {
	t.Helper()
	for i := range 2 {
		for _, tenant := range []string{"acme", "globex"} {
			testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update",
				MsgID: fmt.Sprintf("fxo13-%s-%s-%d", name, tenant, i), Error: "index shard " + name + " unavailable"})
		}
	}
	fp, ok := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`).First().Attr("data-fingerprint")
	require.True(t, ok)
	resp := b.Do(t, c, "POST", "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"4h"}, "return_to": {"/groups"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	return fp
}

// frozenIDs follows a row's action (testid) to its confirmation and
// returns how many dead letters it froze.
func frozenIDs(t *testing.T, b *testfactory.Console, c *http.Client, row *goquery.Selection, testid string) int {
	t.Helper()
	btn := row.Find(`[data-testid="` + testid + `"]`)
	require.Equal(t, 1, btn.Length(), testid)
	action, _ := btn.Closest("form").Attr("action")
	confirm := b.Do(t, c, "POST", action, nil, nil)
	require.Equal(t, http.StatusOK, confirm.Status, confirm.Body)
	return confirm.Doc(t).Find(`form input[type="hidden"][name="id"]`).Length()
}

// TestFixOncall13SnoozedViewActionsTakeTheSnoozedTenant: the mirror of
// TestRevOncall13GroupDiscardTakesASnoozedTenant. Groups → Snoozed lists
// the group by its acme half (where it is snoozed); the row's Discard… and
// Mark resolved… take acme's 2, not globex's that the row does not list;
// its replay draft too. The default page's Mark resolved… takes globex's.
func TestFixOncall13SnoozedViewActionsTakeTheSnoozedTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	fixOncall13Group(t, b, c, "21")

	rows := b.Do(t, c, "GET", "/groups?state=snoozed", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rows.Length())
	require.Equal(t, "acme", strings.TrimSpace(rows.Find(`[data-testid="group-tenants"]`).Text()))
	assert.Equal(t, 2, frozenIDs(t, b, c, rows, "group-discard"), "the snoozed view's Discard… takes acme's 2")
	assert.Equal(t, 2, frozenIDs(t, b, c, rows, "group-resolve"), "and its Mark resolved…")
	label, summary, _ := oncall13Offer(t, b, c, "/groups?state=snoozed")
	assert.Equal(t, "Replay 2 that can go…", label)
	assert.Contains(t, summary, "2 to replay")

	rows = b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	assert.Equal(t, 2, frozenIDs(t, b, c, rows, "group-resolve"), "the default page's Mark resolved… takes globex's 2")
}

// TestFixOncall13RowActionsOnlyWhereAllowed: a person on call in acme who
// only reads globex sees a group of globex alone without Discard… or Mark
// resolved… (its links would take nothing they may close), and a group
// of both tenants whose actions take acme's only.
func TestFixOncall13RowActionsOnlyWhereAllowed(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall", "globex:viewer")
	for i := range 2 {
		testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update",
			MsgID: fmt.Sprintf("fxo13-only-globex-%d", i), Error: "globex only 22"})
		for _, tenant := range []string{"acme", "globex"} {
			testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update",
				MsgID: fmt.Sprintf("fxo13-both-%s-%d", tenant, i), Error: "both 22"})
		}
	}
	d := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t)
	var globexOnly, both *goquery.Selection
	d.Find(`[data-testid="group-row"]`).Each(func(_ int, row *goquery.Selection) {
		switch strings.Join(strings.Fields(row.Find(`[data-testid="group-tenants"]`).Text()), " ") {
		case "globex":
			globexOnly = row
		default:
			both = row
		}
	})
	require.NotNil(t, globexOnly)
	require.NotNil(t, both)
	assert.Zero(t, globexOnly.Find(`[data-testid="group-discard"], [data-testid="group-resolve"], [data-testid="group-replay-offer"]`).Length(),
		"nothing of the globex group may be closed or replayed by this person")
	assert.Equal(t, 2, frozenIDs(t, b, c, both, "group-discard"), "acme's 2 of the group of both tenants")
}

// TestFixOncall13FilterTakesSeveralTenants: the list filter reads several
// tenant values as the scope narrowed to them (what a group row's actions
// send); a value outside the person's tenants is refused as one tenant
// is.
func TestFixOncall13FilterTakesSeveralTenants(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	for _, tenant := range []string{"acme", "globex"} {
		testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update",
			MsgID: "fxo13-several-" + tenant, Error: "several 23"})
	}
	count := func(q string) int {
		t.Helper()
		resp := b.Do(t, c, "GET", "/deadletters?"+q, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		return resp.Doc(t).Find(`[data-testid="deadletter-row"]`).Length()
	}
	assert.Equal(t, 2, count("tenant=acme&tenant=globex"))
	assert.Equal(t, 1, count("tenant=globex&tenant=globex"))
	resp := b.Do(t, c, "GET", "/deadletters?tenant=acme&tenant=initech", nil, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "a tenant not theirs")
	resp = b.Do(t, c, "POST", "/deadletters/discard/filter?tenant=acme&tenant=initech&status=unresolved", nil, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
}

// TestFixOncall13OfferSaysWhatTheRestNeeds: a group of one rebuildable
// dead letter and two manual ones offers the one that can go, and says
// why the rest cannot go with it.
func TestFixOncall13OfferSaysWhatTheRestNeeds(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	for i := range 2 {
		testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund",
			MsgID: fmt.Sprintf("fxo13-rest-refund-%d", i), OperationID: fmt.Sprintf("fxo13-rest-op-%d", i), Error: "upstream 503 rest"})
	}
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update",
		MsgID: "fxo13-rest-search", Error: "upstream 503 rest"})
	row := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	assert.Equal(t, "Replay 1 that can go…", strings.TrimSpace(offerOf(t, b, c, row).Find(`[data-testid="group-replay"]`).Text()))
	rest := strings.Join(strings.Fields(offerOf(t, b, c, row).Find(`[data-testid="group-replay-rest"]`).Text()), " ")
	assert.Contains(t, rest, "cannot be replayed in bulk: request them one at a time")
}

// TestFixOncall13OfferOverTheCapIsNotNothing: a group of 201 dead letters
// in one tenant none of the newest 200 of which could go says so, not
// that nothing of it could go (the 201st was never judged).
func TestFixOncall13OfferOverTheCapIsNotNothing(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	var letters []testfactory.Letter
	for i := range 201 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "email.send",
			MsgID: fmt.Sprintf("fxo13-cap-%d", i), Error: "upstream 503 cap 24"})
	}
	testfactory.DeadLetters(t, b.Pool, letters...)
	row := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	none := strings.Join(strings.Fields(offerOf(t, b, c, row).Find(`[data-testid="group-replay-none"]`).Text()), " ")
	assert.Contains(t, none, "none of the newest 200 of it in each tenant could go")
	assert.NotContains(t, none, "nothing of it could go")
}
