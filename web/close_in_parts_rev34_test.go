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

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev34DiscardAllMatchingTakesAFloodInParts: a flood of 1,002 dead
// letters of one error. "Discard all matching…" answered a bare 422 page
// ("the filter selects more than 1000 dead letters; narrow it") with only
// a link to the dashboard, the filtered list lost: the on-call, at the
// commonest moment for it, had to slice the flood by hand. The
// confirmation now takes the newest dlq.MaxBulkClose and says so; choosing
// it again takes the rest.
func TestRev34DiscardAllMatchingTakesAFloodInParts(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	const flood = dlq.MaxBulkClose + 2
	letters := make([]testfactory.Letter, flood)
	for i := range letters {
		letters[i] = testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("rev34-flood-%d", i),
			OperationID: fmt.Sprintf("rev34-op-%d", i), Error: "index shard 4 read only", Class: "transient"}
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)              // each a second older than the one before
	testfactory.SetStatus(t, b.Pool, dlq.StatusResolved, ids[flood-1]) // the oldest was resolved by hand
	oldest := []string{fmt.Sprint(ids[flood-2])}
	q := "?" + url.Values{"type": {"search.index_update"}}.Encode()

	discard := func() (*goquery.Document, url.Values) {
		resp := b.Do(t, oncall, http.MethodPost, "/deadletters/discard/filter"+q, url.Values{"reason": {"shard 4 flood"}}, nil)
		require.Equal(t, http.StatusOK, resp.Status, "a flood larger than one discard is offered in parts, not refused: %s", resp.Body)
		d := resp.Doc(t)
		form := url.Values{"reason": {"shard 4 flood"}, "confirmed": {"1"}}
		d.Find(`form[data-testid="confirm-form"] input[name="id"]`).Each(func(_ int, s *goquery.Selection) {
			form.Add("id", s.AttrOr("value", ""))
		})
		return d, form
	}
	d, form := discard()
	require.Len(t, form["id"], dlq.MaxBulkClose, "one discard takes dlq.MaxBulkClose")
	page := strings.Join(strings.Fields(d.Find("main").Text()), " ")
	assert.Contains(t, page, "more than 1,000 open dead letters", "the page says the filter selects more than it takes")
	assert.Contains(t, page, "the 1,000 newest", "and which of them it takes")
	assert.NotContains(t, form["id"], oldest[0], "the oldest open one is left for the next round")
	assert.Contains(t, page, "Left out: 1 or more of those matching", "the resolved one is named, and the older open ones counted as more")
	done := b.Do(t, oncall, http.MethodPost, "/deadletters/discard", form, nil)
	require.Equal(t, http.StatusSeeOther, done.Status, done.Body)

	d, form = discard()
	assert.ElementsMatch(t, oldest, form["id"], "the next round takes the rest")
	page = strings.Join(strings.Fields(d.Find("main").Text()), " ")
	assert.NotContains(t, page, "more than 1,000", "and says nothing of parts")
	assert.Contains(t, page, "1,000 dead letters already discarded", "the first round's are named left out")
	done = b.Do(t, oncall, http.MethodPost, "/deadletters/discard", form, nil)
	require.Equal(t, http.StatusSeeOther, done.Status, done.Body)
	var open int
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT count(*) FROM dead_letters WHERE id = ANY($1) AND status <> 'discarded'`, ids).Scan(&open))
	assert.Equal(t, 1, open, "two rounds discarded the flood, all but the one resolved")
}
