package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall10OldestUnresolvedLeadsToIt: the dashboard's alarm card
// "Oldest unresolved — 4d ago" turns red past the chosen threshold, and
// the tenants table repeats it in red per tenant. Neither is a link
// (kpi-oldest is a <div>; the Unresolved card beside it is one), and the
// list they would lead to is newest first with no other order: behind 50
// newer dead letters the oldest is pages away. The on-call whose alarm is
// "the oldest is 4 days old" has no way from the alarm to the dead letter
// it is about, short of copying its time into the list's hidden "To"
// filter. Seen: /tmp/rc10/dash-1024.png (the red card, 84 unresolved).
//
// Severity: low. Expected: the oldest-unresolved card leads to that dead
// letter: its own page, or a list whose first page shows it.
func TestRevOncall10OldestUnresolvedLeadsToIt(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	now := time.Now()
	letters := []testfactory.Letter{{Tenant: "acme", ItemType: "search.index_update", MsgID: "rvo10-oldest", Error: "index shard 4 unavailable",
		At: now.Add(-72 * time.Hour)}}
	for i := range dlq.ListPageSize + 5 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("rvo10-newer-%d", i),
			Error: "index shard 4 unavailable", At: now.Add(-time.Duration(i+1) * time.Minute)})
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	_, err := b.Store.Counters().Refresh(t.Context())
	require.NoError(t, err)

	d := b.Do(t, oncall, "GET", "/", nil, nil).Doc(t)
	card := d.Find(`[data-testid="kpi-oldest"]`)
	require.Equal(t, 1, card.Length())
	require.Contains(t, card.Text(), "3d ago", "the card names the oldest unresolved dead letter's age")
	href, ok := card.Attr("href")
	if !ok {
		href, ok = card.Find("a[href]").First().Attr("href")
	}
	if !assert.True(t, ok, "the red 'Oldest unresolved' card leads nowhere") {
		return
	}
	resp := b.Do(t, oncall, "GET", href, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	page := resp.Doc(t)
	itsOwnPage := page.Find(`.crumbs [aria-current="page"]`).Text() == fmt.Sprint(ids[0])
	assert.True(t, itsOwnPage || page.Find(fmt.Sprintf(`[data-testid="deadletter-row"][data-id="%d"]`, ids[0])).Length() == 1,
		"the oldest unresolved dead letter is not on the page the card leads to")
}
