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

// TestRevTriage27SnoozeTakesOnlyTheOfferedDurations: a snooze for a time
// the form does not offer (an edited form: a year) is refused with a
// message at the field, and the group stays awake.
func TestRevTriage27SnoozeTakesOnlyTheOfferedDurations(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "rev27b-snooze", nil)
	fp, _, _ := panelForm(t, b, oncall)
	resp := b.Do(t, oncall, "POST", "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"8760h"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	assert.Contains(t, textOf(resp.Doc(t), `[data-testid="field-error-for"]`), "Choose one of the durations")
	_, _, _, snoozed := triageOf(t, b, oncall, fp)
	assert.False(t, snoozed, "not snoozed")
	assert.Zero(t, b.AuditCount(t, "action = 'group.snooze'"))
}

// TestRevTriage27OwnerSaveRefusedOverAColleaguesOwner: a panel drawn
// before a colleague made themselves the group's owner, saved with
// another owner, is a conflict: the colleague stays the owner and nothing
// is audited (the owner's own *_was guard, as the note's).
func TestRevTriage27OwnerSaveRefusedOverAColleaguesOwner(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	other, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "rev27b-owner", nil)
	fp, action, mine := panelForm(t, b, oncall)
	_, _, theirs := panelForm(t, b, other)
	theirs.Set("owner", "payments-team")
	require.Equal(t, http.StatusSeeOther, b.Do(t, other, "POST", action, theirs, nil).Status)

	mine.Set("owner", "search-team")
	audited := b.AuditCount(t, "object_id = $1", fp)
	resp := b.Do(t, oncall, "POST", action, mine, nil)
	assert.Equal(t, http.StatusConflict, resp.Status, resp.Body)
	owner, _, _, _ := triageOf(t, b, oncall, fp)
	assert.Equal(t, "payments-team", owner, "the colleague's owner is kept")
	assert.Equal(t, audited, b.AuditCount(t, "object_id = $1", fp), "nothing written, nothing audited")
}

// TestRevTriage27DashboardItemTypeLinkListsWhatItCounts: an item type's
// row on the dashboard counts its unresolved dead letters, and its link
// lists exactly those: not the ones resolved already.
func TestRevTriage27DashboardItemTypeLinkListsWhatItCounts(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ids := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Class: "permanent", Error: "rev27b open"},
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Class: "permanent", Error: "rev27b resolved"},
	)
	testfactory.SetStatus(t, b.Pool, dlq.StatusResolved, ids[1])
	c, _ := b.SignIn(t, "acme:viewer")
	resp := b.Do(t, c, "GET", "/", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	row := resp.Doc(t).Find(`[data-testid="by-type"] [data-testid="dim-row"][data-value="orders.refund"]`)
	require.Equal(t, 1, row.Length(), "the item type has its row")
	assert.Equal(t, "1", strings.TrimSpace(row.Find(`[data-testid="dim-unresolved"]`).Text()))
	link, ok := row.Find("a").Attr("href")
	require.True(t, ok)
	list := b.Do(t, c, "GET", link, nil, nil)
	require.Equal(t, http.StatusOK, list.Status, list.Body)
	rows := list.Doc(t).Find(`[data-testid="deadletter-row"]`)
	assert.Equal(t, 1, rows.Length(), "the link lists the one it counts (%s)", link)
	assert.Equal(t, fmt.Sprint(ids[0]), rows.First().AttrOr("data-id", ""))
}

// TestRevTriage27GroupFormNeverReturnsOffSite: a group action's form
// comes back (303) to the page it names in return_to only when that is a
// page of this console: an edited return_to of another site sends the
// person to the groups page, not off-site.
func TestRevTriage27GroupFormNeverReturnsOffSite(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	seed(t, b, "acme", "search.index_update", "rev27b-return", nil)
	fp, _, _ := panelForm(t, b, oncall)
	for _, to := range []string{"https://evil.example/groups", "//evil.example/groups"} {
		resp := b.Do(t, oncall, "POST", "/groups/owner", url.Values{"tenant": {"acme"}, "group": {fp}, "owner": {"search-team"},
			"return_to": {to}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		assert.Equal(t, "/groups", resp.Header.Get("Location"), "return_to %q", to)
	}
}
