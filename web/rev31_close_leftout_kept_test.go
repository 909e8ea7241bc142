package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// discardAllMatching stores two dead letters of one item type in acme and
// two in globex (message ids prefix-0..3), and has oncall (who may
// discard in acme and only read globex) press "Discard all matching…" on
// the list filtered by that type: it returns the ids, the confirmation and
// its form's hidden fields, which offer acme's two.
func discardAllMatching(t *testing.T, b *testfactory.Console, oncall *http.Client, prefix string) ([]int64, *goquery.Document, url.Values) {
	t.Helper()
	var letters []testfactory.Letter
	for i, tenant := range []string{"acme", "acme", "globex", "globex"} {
		letters = append(letters, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update", MsgID: fmt.Sprintf("%s-%d", prefix, i),
			Error: "index shard " + prefix + " unavailable"})
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	var action string
	wait.Until(t, "all matching offered", 30*time.Second, func() bool {
		d := b.Do(t, oncall, "GET", "/deadletters?type=search.index_update", nil, nil).Doc(t)
		action = d.Find(`form[action^="/deadletters/discard/filter"]`).AttrOr("action", "")
		return action != "" && d.Find(`[data-testid="deadletter-row"]`).Length() > 0
	})
	confirm := b.Do(t, oncall, "POST", action, nil, nil)
	require.Equal(t, http.StatusOK, confirm.Status, "%.300s", confirm.Body)
	d := confirm.Doc(t)
	form := url.Values{}
	d.Find(`form[data-testid="confirm-form"] input[type="hidden"]`).Each(func(_ int, s *goquery.Selection) {
		form.Add(s.AttrOr("name", ""), s.AttrOr("value", ""))
	})
	require.Len(t, form["id"], 2, "acme's two are offered")
	return ids, d, form
}

// TestRevOncall31CloseLeftOutKeptWhenTheCloseIsRefused: "Discard all
// matching" confirms acme's two dead letters and says that globex's two
// (where the on-call may only read) are left out. Its form carries the
// ids only, so a close the page refused (no reason typed) rendered it
// again without globex, and the flash of the close done said nothing of
// them: the on-call who fixed the reason believed the poison type closed
// everywhere. Both say it now; a token the session does not keep names
// nothing.
func TestRevOncall31CloseLeftOutKeptWhenTheCloseIsRefused(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:viewer")
	_, d, form := discardAllMatching(t, b, oncall, "rev31-left")
	leftOut := func(d *goquery.Document) string {
		return strings.Join(strings.Fields(d.Find(`[data-testid="confirm-left-out"]`).Text()), " ")
	}
	require.Contains(t, leftOut(d), "2 dead letters in globex, where you may not discard", "the confirmation names globex's two")

	t.Run("ForgedToken", func(t *testing.T) {
		forged := url.Values{"id": form["id"], "return_to": form["return_to"], "left_out": {"not-kept"}}
		resp := b.Do(t, oncall, "POST", "/deadletters/discard", forged, nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "%.300s", resp.Body)
		assert.Empty(t, leftOut(resp.Doc(t)), "a token the session does not keep names nothing")
		onResolve := url.Values{"id": form["id"], "return_to": form["return_to"], "left_out": form["left_out"]}
		resp = b.Do(t, oncall, "POST", "/deadletters/resolve", onResolve, nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "%.300s", resp.Body)
		assert.Empty(t, leftOut(resp.Doc(t)), "a discard's token names nothing on the resolve route")
	})

	refused := b.Do(t, oncall, "POST", "/deadletters/discard", form, nil)
	require.Equal(t, http.StatusUnprocessableEntity, refused.Status, "%.300s", refused.Body)
	rd := refused.Doc(t)
	assert.Contains(t, leftOut(rd), "2 dead letters in globex, where you may not discard", "the page a refused close renders still says it")
	assert.Contains(t, leftOut(rd), "Left out: 2 of the 4 matching", "counted as the list counts")

	again := url.Values{}
	rd.Find(`form[data-testid="confirm-form"] input[type="hidden"]`).Each(func(_ int, s *goquery.Selection) {
		again.Add(s.AttrOr("name", ""), s.AttrOr("value", ""))
	})
	again.Set("reason", "index shard rev31 rebuilt by hand")
	again.Set("confirmed", "1")
	done := b.Do(t, oncall, "POST", "/deadletters/discard", again, nil)
	require.Equal(t, http.StatusSeeOther, done.Status, "%.300s", done.Body)
	list := b.Do(t, oncall, "GET", done.Header.Get("Location"), nil, nil).Doc(t)
	assert.Equal(t, "2 dead letters discarded. It also selects 2 dead letters in globex, where you may not discard.",
		strings.Join(strings.Fields(list.Find(`[data-testid="flash"]`).Text()), " "))
	var open int
	require.NoError(t, b.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM dead_letters WHERE msg_id LIKE 'rev31-left-%' AND status = 'quarantined'`).Scan(&open))
	assert.Equal(t, 2, open, "globex's two are untouched")
	after := b.Do(t, oncall, "POST", "/deadletters/discard", url.Values{"id": form["id"], "left_out": form["left_out"]}, nil)
	assert.NotContains(t, leftOut(after.Doc(t)), "globex", "once the close is done its token is let go")
}

// TestRevOncall31CloseLeftOutCountsWhatChangedSince: the same "Discard
// all matching" (acme's two offered, globex's two left out), and one of
// acme's is taken into a replay request before the on-call confirms. The
// close is refused whole (409) and its page says both: the one the
// request now holds, counted among those confirmed, and globex's two,
// which the filter left out; "Left out: 3 of the 4 matching".
func TestRevOncall31CloseLeftOutCountsWhatChangedSince(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, who := b.SignIn(t, "acme:oncall", "globex:viewer")
	ids, _, form := discardAllMatching(t, b, oncall, "rev31-changed")
	held := testfactory.Request(t, b.Replays, who.Actor, ids[:1], replay.SubmitInput{Reason: "shard rebuilt"})

	form.Set("reason", "index shard rev31 rebuilt by hand")
	form.Set("confirmed", "1")
	resp := b.Do(t, oncall, "POST", "/deadletters/discard", form, nil)
	require.Equal(t, http.StatusConflict, resp.Status, "%.300s", resp.Body)
	d := resp.Doc(t)
	assert.Equal(t, "Nothing changed: 1 of the 2 dead letters you confirmed cannot be discarded now; why is below. Confirm again to discard the other one.",
		textOf(d, `[data-testid="confirm-error"]`))
	left := strings.Join(strings.Fields(d.Find(`[data-testid="confirm-left-out"]`).Text()), " ")
	assert.Contains(t, left, "Left out: 3 of the 4 matching")
	assert.Contains(t, left, "2 dead letters in globex, where you may not discard")
	assert.Contains(t, left, fmt.Sprintf("1 dead letter in replay request #%d", held.ID))
	assert.Equal(t, 1, d.Find(`form[data-testid="confirm-form"] input[name="id"]`).Length(), "the other one is offered")
}

// TestRevTriage31LeftOutNamesCutIds: the dead letters a close leaves out
// are named by message id, and a producer's id may be as long as a
// message (ingest keeps it whole). The confirmation, and the session that
// keeps what a filter left out, read it whole: a page and a session of
// megabytes from a few such ids. They read it cut, as every list does
// (dlq.ListTextChars).
func TestRevTriage31LeftOutNamesCutIds(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	long := "rev31-long-" + strings.Repeat("i", 64<<10)
	ids := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: long, Error: "index shard rev31 cut unavailable"},
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rev31-short", Error: "index shard rev31 cut unavailable"})
	testfactory.SetStatus(t, b.Pool, dlq.StatusResolved, ids[0])
	resp := b.Do(t, oncall, "POST", "/deadletters/discard/filter?type=search.index_update", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, "%.300s", resp.Body)
	named := resp.Doc(t).Find(`[data-testid="left-out-item"]`)
	require.Equal(t, 1, named.Length(), "the resolved one is named")
	assert.Equal(t, dlq.ListTextChars, len([]rune(named.Text())), "by its id cut as a list cuts it")
	assert.Less(t, len(resp.Body), 64<<10, "the page does not hold the id whole")
}

// TestRevTriage31CloseSaysWhatItDidNotFind: five ticked, one removed by
// retention before the discard was confirmed: the discard closes the
// other four (all or nothing of what is there) and its message said "4
// dead letters discarded." with nothing of the fifth. It says so.
func TestRevTriage31CloseSaysWhatItDidNotFind(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	var letters []testfactory.Letter
	for i := range 5 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("rev31-gone-%d", i),
			Error: "index shard rev31 gone unavailable"})
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	_, err := b.Pool.Exec(t.Context(), `DELETE FROM dead_letters WHERE id = $1`, ids[4])
	require.NoError(t, err)
	form := url.Values{"reason": {"duplicates"}, "confirmed": {"1"}, "return_to": {"/deadletters"}}
	for _, id := range ids {
		form.Add("id", fmt.Sprint(id))
	}
	resp := b.Do(t, oncall, "POST", "/deadletters/discard", form, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, "%.300s", resp.Body)
	list := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	assert.Equal(t, "4 dead letters discarded. 1 selected dead letter was not found (no longer there, or not yours to read): left out.",
		strings.Join(strings.Fields(list.Find(`[data-testid="flash"]`).Text()), " "))
}
