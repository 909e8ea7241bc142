package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestFixUX11SnoozedGroupsAreNamed: the groups page ("With unresolved") and
// the dashboard's top groups leave a snoozed group out, and say so: how
// many, linked to the snoozed groups; the dashboard lists the other group
// and never says everything was dealt with.
func TestFixUX11SnoozedGroupsAreNamed(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "fux11-a", Error: "shard offline"},
		testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "fux11-b", Error: "smtp refused the recipient"})
	groups := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t)
	rows := groups.Find(`[data-testid="group-row"]`)
	require.Equal(t, 2, rows.Length())
	assert.Zero(t, groups.Find(`[data-testid="snoozed-hidden"]`).Length(), "nothing snoozed, nothing said")
	fp, _ := rows.First().Attr("data-fingerprint")
	resp := b.Do(t, oncall, "POST", "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"4h"},
		"return_to": {"/groups"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	t.Run("GroupsPage", func(t *testing.T) {
		d := b.Do(t, oncall, "GET", "/groups?sort=recent", nil, nil).Doc(t)
		assert.Equal(t, 1, d.Find(`[data-testid="group-row"]`).Length())
		hint := d.Find(`[data-testid="group-count"] [data-testid="snoozed-hidden"]`)
		require.Equal(t, 1, hint.Length(), "the count says a snoozed group is hidden")
		assert.Equal(t, "1 group snoozed in some tenants", strings.TrimSpace(hint.Text()))
		href, _ := hint.Attr("href")
		assert.Equal(t, "/groups?sort=recent&state=snoozed", href)
		snoozed := b.Do(t, oncall, "GET", href, nil, nil).Doc(t)
		assert.Equal(t, 1, snoozed.Find(`[data-testid="group-row"]`).Length(), "the link shows it")
		assert.Zero(t, snoozed.Find(`[data-testid="snoozed-hidden"]`).Length(), "and hides nothing")
	})
	t.Run("Dashboard", func(t *testing.T) {
		d := b.Do(t, oncall, "GET", "/", nil, nil).Doc(t)
		card := d.Find(`section[aria-labelledby="h-groups"]`)
		assert.Equal(t, 1, card.Find(`[data-testid="group-row"]`).Length(), "the group not snoozed is listed")
		hint := card.Find(`[data-testid="dash-snoozed"]`)
		require.Equal(t, 1, hint.Length())
		assert.Contains(t, strings.Join(strings.Fields(hint.Text()), " "), "1 group snoozed in some tenants (1 unresolved dead letter there, not counted here)")
		href, _ := hint.Find("a").Attr("href")
		assert.Equal(t, "/groups?state=snoozed", href)
		assert.NotContains(t, card.Text(), "dealt with")
	})
}

// TestFixUX11ReplayByFilterOfNothingGoesBack: a replay by filter that
// selects nothing (a group all dealt with since its menu was drawn) goes
// back to the list with a message, as a close by filter does.
func TestFixUX11ReplayByFilterOfNothingGoesBack(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "fux11-nothing", nil)
	resp := b.Do(t, oncall, "POST", "/deadletters/"+strconv.FormatInt(id, 10)+"/resolve",
		url.Values{"reason": {"reindexed by hand"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	out := b.Do(t, oncall, "POST", "/replay/filter?tenant=acme&status=unresolved", url.Values{}, nil)
	require.Equal(t, http.StatusSeeOther, out.Status, out.Body)
	assert.Equal(t, "/deadletters?status=unresolved&tenant=acme", out.Header.Get("Location"))
	page := b.Do(t, oncall, "GET", out.Header.Get("Location"), nil, nil).Doc(t)
	assert.Contains(t, page.Find(`[data-testid="flash"]`).Text(), "nothing to replay")
}

// TestFixUX11NotAppliedCounts: an item settled "not applied, leave it" is
// counted as such in the request's outcome, its stored reason and the
// replays page's chips, and its badge leads to its dead letter.
func TestFixUX11NotAppliedCounts(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "search.index_update", "fux11-not-applied", nil)
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "shard back"})
	testfactory.NeedsPerson(t, b.Pool, req.ID)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	resp := b.Do(t, approver, "POST", fmt.Sprintf("%s/items/%d/reconcile", path, id),
		url.Values{"choice": {"not_applied"}, "note": {"the document is missing"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	d := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	outcome := d.Find(`[data-testid="replay-item-outcome"]`).First()
	assert.Equal(t, views.OutcomeNotApplied, outcome.AttrOr("data-outcome", ""))
	assert.Equal(t, "not applied — back in quarantine", strings.TrimSpace(outcome.Text()))
	assert.Equal(t, fmt.Sprintf("/deadletters/%d", id), outcome.Find("a").AttrOr("href", ""))
	assert.Equal(t, "1", textOf(d, `[data-testid="progress-not-applied"]`))
	assert.Zero(t, d.Find(`[data-testid="progress-cancelled"]`).Length())
	summary := strings.Join(strings.Fields(d.Find(`[data-testid="progress-summary"]`).Text()), " ")
	assert.Contains(t, summary, "1 not applied (back in quarantine)")
	assert.NotContains(t, summary, "cancelled")

	list := b.Do(t, approver, "GET", views.PathReplays, nil, nil).Doc(t)
	assert.NotContains(t, list.Text(), "cancelled ·", "no item reads cancelled")
	assert.Contains(t, strings.Join(strings.Fields(list.Text()), " "), "not applied — back in quarantine")
	assert.Equal(t, views.OutcomeNotApplied, replay.OutcomeNotApplied, "one name on both sides")
}

// TestFixUX11AuditObjectTypes: an object typed with a type the log has no
// entry of is refused at the field, the message naming the types; the
// console's own words for a request read as replay_request.
func TestFixUX11AuditObjectTypes(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "*:auditor")
	id := seed(t, b, "acme", "search.index_update", "fux11-audit", nil)
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "shard back"})

	named := b.Do(t, auditor, "GET", "/audit?object="+url.QueryEscape(fmt.Sprintf("request #%d", req.ID)), nil, nil)
	require.Equal(t, http.StatusOK, named.Status, named.Body)
	assert.NotZero(t, named.Doc(t).Find(`[data-testid="audit-row"]`).Length())

	bad := b.Do(t, auditor, "GET", "/audit?object="+url.QueryEscape("dead_leter 138"), nil, nil)
	require.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	msg := textOf(bad.Doc(t), `#f-object-error`)
	assert.Contains(t, msg, `"dead_leter"`)
	assert.Contains(t, msg, "dead_letter, ")

	none := b.Do(t, auditor, "GET", "/audit?object="+url.QueryEscape("dead_letter 999999"), nil, nil).Doc(t)
	assert.Contains(t, textOf(none, `[data-testid="empty-state"]`), "No entries for this object")
}
