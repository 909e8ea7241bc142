package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevUX33ConfirmPageCountsEverySkippedItem: the confirm page reads a
// request's first 1,000 items; its header counted every item left out
// ("1,000 to replay · 5 blocked") but its "Skipped or blocked" table
// listed only those among the items read, with no word of the others.
// The table now ends with how many more there are and a link to the
// draft's page, which lists every item and why.
func TestRevUX33ConfirmPageCountsEverySkippedItem(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, me := b.SignIn(t, "acme:oncall")
	now := time.Now().Add(-time.Hour)
	var letters []testfactory.Letter
	for i := range 1005 {
		letters = append(letters, testfactory.Letter{ItemType: "search.index_update", MsgID: fmt.Sprintf("rr33-c-%04d", i),
			Payload: []byte(`{}`), At: now.Add(-time.Duration(i) * time.Second)})
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	blocked := []int64{ids[0], ids[1], ids[2], ids[1002], ids[1003], ids[1004]}
	testfactory.SetStatus(t, b.Pool, dlq.StatusDiscarded, blocked...)
	batch, drafts := testfactory.Draft(t, b.Replays, me.Actor, ids...)
	require.Len(t, drafts, 1)

	page := b.Do(t, oncall, "GET", "/replay/batches/"+batch, nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	d := page.Doc(t)
	rows := d.Find(`[data-testid="replay-skipped"] [data-testid="replay-item"]`).Length()
	require.Less(t, rows, len(blocked), "the page reads the first 1,000 items only, so some blocked ones are past them")
	more := strings.Join(strings.Fields(d.Find(`[data-testid="replay-skipped-more"]`).Text()), " ")
	want := fmt.Sprintf("and %d more, past the items this page reads", len(blocked)-rows)
	if rows == 0 {
		want = fmt.Sprintf("%d, past the items this page reads", len(blocked))
	}
	assert.Contains(t, more, want, "the table says how many it does not list")
	href, ok := d.Find(`[data-testid="replay-skipped-more"] a`).Attr("href")
	require.True(t, ok, "and links where they are listed")
	assert.Equal(t, fmt.Sprintf("/replay/requests/%d", drafts[0].ID), href)
	draft := b.Do(t, oncall, "GET", href, nil, nil)
	require.Equal(t, http.StatusOK, draft.Status, "the requester opens their draft")
}
