package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// oncall13Offer follows a group row's "Replay N that can go…" to the draft
// it makes and returns the offer's label and the draft's summary (and the
// number of items the draft would replay, read from its items table).
func oncall13Offer(t *testing.T, b *testfactory.Console, c *http.Client, groupsURL string) (label, summary string, submit int) {
	t.Helper()
	page := b.Do(t, c, "GET", groupsURL, nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	rows := page.Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rows.Length(), "one group on %s", groupsURL)
	offer := offerOf(t, b, c, rows).Find(`[data-testid="group-replay"]`)
	if offer.Length() == 0 {
		return "", "", -1
	}
	label = strings.TrimSpace(offer.Text())
	action, _ := offer.Closest("form").Attr("action")
	resp := b.Do(t, c, "POST", action, nil, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := b.Do(t, c, "GET", resp.Header.Get("Location"), nil, nil)
	require.Equal(t, http.StatusOK, confirm.Status, confirm.Body)
	d := confirm.Doc(t)
	summary = strings.Join(strings.Fields(d.Find(`[data-testid="replay-summary"]`).Text()), " ")
	return label, summary, d.Find(`[data-testid="replay-submit"]`).Length()
}

// TestRevOncall13GroupOfferIgnoresTheItemTypeFilter: an error group (one
// fingerprint: same class, same message) holds search.index_update dead
// letters (rebuildable) and email.send ones whose producer sent no
// operation id (same_operation: never replayable). The on-call narrows
// the groups page to Item type = email.send. The row counts only the
// email.send dead letters, and its replay link selects only them
// (type=email.send), but GroupOffers judges the whole group in the
// tenant: the menu says "Replay 2 that can go…" — the two search ones the
// page does not show — and the click makes a draft of nothing that can go.
//
// Expected: the offer judges what its link selects (the page's item type
// and tenant), so it says "No group replay: … operation id".
func TestRevOncall13GroupOfferIgnoresTheItemTypeFilter(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	for i := range 2 {
		for _, typ := range []string{"search.index_update", "email.send"} {
			testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: typ,
				MsgID: fmt.Sprintf("rvo13-type-%s-%d", typ, i), Error: "upstream 503 service unavailable"})
		}
	}
	all := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t)
	require.Equal(t, 1, all.Find(`[data-testid="group-row"]`).Length(), "one fingerprint for both item types")

	label, summary, submit := oncall13Offer(t, b, c, "/groups?type=email.send")
	if submit < 0 {
		return // not offered: right, nothing of email.send can go
	}
	assert.Equal(t, 1, submit,
		"the groups page filtered to email.send offered %q; the click leads to a draft: %s", label, summary)
}

// TestRevOncall13GroupOfferLeavesOutASnoozedTenant: the same error group in
// acme and globex; the on-call (on-call in both) snoozed it in acme (the
// fix is not deployed there yet). The groups page lists the group by what
// is not snoozed — globex: 2 unresolved, tenants "globex" — and offers
// "Replay 2 that can go…" (GroupOffers looks only in globex). The click's
// filter has no tenant and no snooze: the draft takes acme's snoozed dead
// letters too, 4 to replay. (Mark resolved… and Discard… of the row take
// them as well.) A person who snoozed acme's half precisely so that it
// waits gets it replayed with the rest by a menu that said 2.
//
// Expected: the row's replay (and discard/resolve) links select the
// tenants the row shows (g.Tenants), or the offer counts what the link
// selects; the draft replays what the offer said.
func TestRevOncall13GroupOfferLeavesOutASnoozedTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	for i := range 2 {
		for _, tenant := range []string{"acme", "globex"} {
			testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update",
				MsgID: fmt.Sprintf("rvo13-snz-%s-%d", tenant, i), Error: "index shard 3 unavailable"})
		}
	}
	fp, ok := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`).First().Attr("data-fingerprint")
	require.True(t, ok)
	resp := b.Do(t, c, "POST", "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"4h"},
		"return_to": {"/groups"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	rows := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rows.Length())
	require.Equal(t, "2", strings.TrimSpace(rows.Find(`[data-testid="group-unresolved"]`).Text()), "the row counts globex only")

	label, summary, _ := oncall13Offer(t, b, c, "/groups")
	require.NotEmpty(t, label, "globex's half can go")
	assert.Contains(t, summary, "2 to replay",
		"the row said 2 unresolved in globex and offered %q; the draft (acme snoozed) says: %s", label, summary)
}

// TestRevOncall13GroupDiscardTakesASnoozedTenant: as above, the group is
// snoozed in acme and listed by its globex half (2 unresolved, tenants
// globex). The row's Discard… freezes the group's open dead letters in
// every tenant where the person may discard, acme's snoozed ones too: the
// confirmation form carries 4 ids for a row that said 2. A discard cannot
// be undone by a replay of the same intent: acme's half, kept waiting for
// its fix, is gone with globex's.
//
// Expected: the row's actions select the tenants the row lists (the
// snooze leaves acme out of the row, so out of its actions).
func TestRevOncall13GroupDiscardTakesASnoozedTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	for i := range 2 {
		for _, tenant := range []string{"acme", "globex"} {
			testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update",
				MsgID: fmt.Sprintf("rvo13-dsc-%s-%d", tenant, i), Error: "index shard 5 unavailable"})
		}
	}
	fp, ok := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`).First().Attr("data-fingerprint")
	require.True(t, ok)
	resp := b.Do(t, c, "POST", "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"4h"},
		"return_to": {"/groups"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	rows := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rows.Length())
	require.Equal(t, "globex", strings.TrimSpace(rows.Find(`[data-testid="group-tenants"]`).Text()))
	discard := rows.Find(`[data-testid="group-discard"]`)
	require.Equal(t, 1, discard.Length())
	action, _ := discard.Closest("form").Attr("action")
	confirm := b.Do(t, c, "POST", action, nil, nil)
	require.Equal(t, http.StatusOK, confirm.Status, confirm.Body)
	ids := confirm.Doc(t).Find(`form input[type="hidden"][name="id"]`)
	assert.Equal(t, 2, ids.Length(), "the row listed globex's 2 unresolved; its Discard… confirms: %s",
		strings.Join(strings.Fields(confirm.Doc(t).Find(`main`).Text()), " "))
}

// TestRevOncall13GroupOfferJudgesOneTenantAndSaysNothingCanGo: GroupOffers
// reads up to 201 candidates of a group in each tenant but judges only the
// first 200 rows of the group, tenant after tenant (seen[fp] counts across
// tenants). An error group in acme (201 email.send dead letters whose
// producer sent no operation id: never replayable) and in globex (2
// search.index_update ones: rebuildable, they go). The 200 judged are all
// acme's; globex's are never judged; the menu then says "No group replay:
// nothing of it could go: …operation id" — a false "nothing", while the
// group's replay link would make a draft of globex's 2 that go. The tired
// on-call believes the menu and replays nothing.
//
// Expected: each tenant's candidates are judged (the cap per group and
// tenant, as the query reads them), and a cap reached is never worded as
// "nothing of it could go".
func TestRevOncall13GroupOfferJudgesOneTenantAndSaysNothingCanGo(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	var letters []testfactory.Letter
	for i := range 201 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "email.send",
			MsgID: fmt.Sprintf("rvo13-cap-acme-%d", i), Error: "upstream 503 service unavailable"})
	}
	for i := range 2 {
		letters = append(letters, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update",
			MsgID: fmt.Sprintf("rvo13-cap-globex-%d", i), Error: "upstream 503 service unavailable"})
	}
	testfactory.DeadLetters(t, b.Pool, letters...)

	rows := b.Do(t, c, "GET", "/groups", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rows.Length(), "one fingerprint in both tenants")
	none := strings.Join(strings.Fields(offerOf(t, b, c, rows).Find(`[data-testid="group-replay-none"]`).Text()), " ")
	assert.NotContains(t, none, "nothing of it could go", "globex's 2 rebuildable dead letters can go")

	// What the group's replay (by filter) makes of it: globex's 2 go.
	resp := b.Do(t, c, "POST", "/replay/filter?group="+rows.AttrOr("data-fingerprint", "")+"&status=unresolved", nil, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	d := b.Do(t, c, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	summary := strings.Join(strings.Fields(d.Find(`[data-testid="replay-summary"]`).Text()), " ")
	require.Contains(t, summary, "2 to replay", "the groups page said: %q", none)
}

// TestRevOncall13ResolvedGroupIsNotSaidHeldByARequest: Groups → Show "All
// groups" lists an error group every dead letter of which was marked
// resolved (0 unresolved). Its menu says "No group replay: nothing of it
// waits for a replay you may request: every unresolved dead letter of it
// is in a replay request already, or in a tenant where you may not request
// replays" — there is no unresolved dead letter and no request; the on-call
// goes looking for a request that does not exist. (Before round 12, a
// group with fewer than 2 unresolved got no such line.)
//
// Expected: a group with nothing unresolved shows no replay line, or says
// "nothing of it is unresolved".
func TestRevOncall13ResolvedGroupIsNotSaidHeldByARequest(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	var ids []int64
	for i := range 2 {
		ids = append(ids, testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update",
			MsgID: fmt.Sprintf("rvo13-resolved-%d", i), Error: "index shard 6 unavailable"}))
	}
	testfactory.SetStatus(t, b.Pool, dlq.StatusResolved, ids...)
	rows := b.Do(t, c, "GET", "/groups?state=all", nil, nil).Doc(t).Find(`[data-testid="group-row"]`)
	require.Equal(t, 1, rows.Length())
	require.Equal(t, "0", strings.TrimSpace(rows.Find(`[data-testid="group-unresolved"]`).Text()))
	none := strings.Join(strings.Fields(offerOf(t, b, c, rows).Find(`[data-testid="group-replay-none"]`).Text()), " ")
	assert.NotContains(t, none, "in a replay request already", "a resolved group with no request")
}

// TestRevOncall13GroupOfferCountsManualItemsThatCannotGoTogether: an error
// group holds one search.index_update dead letter (rebuildable) and two
// orders.refund ones (manual: no bulk, one item per request), all with
// their ids. GroupOffers judges each item alone (JudgeItem at draft) and
// counts 3; noGroupReplay lets it through because one of the group's item
// types allows bulk. The menu says "Replay 3 that can go…"; the click's
// draft says "1 to replay · 2 blocked" (the refunds, refused as a bulk of
// manual items). The count the on-call acted on was false.
//
// Expected: the offer applies the request-level bulk rule to what it
// counts (the manual items of a group count only as "one at a time"), so
// it says "Replay 1 that can go…" and what the rest needs.
func TestRevOncall13GroupOfferCountsManualItemsThatCannotGoTogether(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	for i := range 2 {
		testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund",
			MsgID: fmt.Sprintf("rvo13-mixed-refund-%d", i), OperationID: fmt.Sprintf("rvo13-mixed-op-%d", i), Error: "upstream 503 mixed"})
	}
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update",
		MsgID: "rvo13-mixed-search", Error: "upstream 503 mixed"})
	label, summary, _ := oncall13Offer(t, b, c, "/groups")
	require.NotEmpty(t, label, "the search item can go")
	n := strings.TrimSuffix(strings.TrimPrefix(label, "Replay "), " that can go…")
	assert.Contains(t, summary, n+" to replay", "the groups page offered %q; the draft says: %s", label, summary)
}
