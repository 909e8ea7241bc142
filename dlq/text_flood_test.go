package dlq_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestTextSearchReadsAFloodedDayOnce searches for words said earlier in a
// day that then took a flood of dead letters without them, within the
// search's first window of time (on-call searching during an incident).
// That window holds most of the day's partition, which PostgreSQL reads
// through the trigram index alone, every match of the day, so the search
// reads the rest of the day in the same statement instead of reading the
// same matches again for each next window: one statement finds the page,
// and the pages, both ways, are those of one query over everything. A
// search in a day without a flood keeps its small first window.
func TestTextSearchReadsAFloodedDayOnce(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	// Yesterday, whose minute arrivals are kept whatever the time now.
	day := dlq.Day(time.Now()).AddDate(0, 0, -1)
	cursorAt := day.Add(20 * time.Hour)
	var letters []testfactory.Letter
	for i := range 70 { // the words, early in the day
		letters = append(letters, testfactory.Letter{Tenant: []string{"acme", "globex"}[i%2], MsgID: fmt.Sprint("said-", i),
			At: day.Add(2*time.Hour + time.Duration(i)*5*time.Minute), Error: fmt.Sprint("dial tcp: connection refused #", i)})
	}
	for i := range 400 { // the flood, in the minute before the cursor
		letters = append(letters, testfactory.Letter{Tenant: []string{"acme", "globex"}[i%2], MsgID: fmt.Sprint("flood-", i),
			At: cursorAt.Add(-time.Minute + time.Duration(i)*100*time.Millisecond), Error: "schema invalid: missing field amount"})
	}
	for i := range 100 { // the days before, at their usual rate
		letters = append(letters, testfactory.Letter{Tenant: "acme", MsgID: fmt.Sprint("before-", i),
			At: day.Add(-time.Duration(i+1) * 20 * time.Minute), Error: fmt.Sprint("dial tcp: connection refused, before #", i)})
	}
	testfactory.DeadLetters(t, db.Pool, letters...)

	// The statements the store sends, through a pool of its own.
	cfg := db.Pool.Config().Copy()
	statements := &testfactory.Statements{}
	cfg.ConnConfig.Tracer = statements
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store := dlq.NewStore(pool)
	store.SetTextWindowRows(5) // a first window of a few minutes: the flood and no word
	windowReads := func() (n int) {
		for _, s := range statements.Take() {
			if strings.Contains(s, "OFFSET 0") { // a window's keys (not whether a row lies past an edge)
				n++
			}
		}
		return n
	}

	both := []string{"acme", "globex"}
	f := dlq.ListFilter{Tenants: both, Text: "connection refused", Before: dlq.Cursor{At: cursorAt, ID: 1 << 40}.Encode()}
	rows, err := db.Pool.Query(ctx, `SELECT id FROM dead_letters WHERE error ILIKE '%connection refused%' AND dead_lettered_at < $1
ORDER BY dead_lettered_at DESC, id DESC`, cursorAt)
	require.NoError(t, err)
	want, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Len(t, want, 170)

	statements.Reset()
	page, err := store.ListDeadLetters(ctx, f)
	require.NoError(t, err)
	assert.Equal(t, want[:dlq.ListPageSize], itemIDs(page), "the newest matches before the cursor")
	assert.Equal(t, 1, windowReads(), "the flooded day's matches are read once: the first window reaches the day's start")

	// Paging on, and back, gives the pages of one query over everything.
	var forward []int64
	for {
		forward = append(forward, itemIDs(page)...)
		if page.Next == "" {
			break
		}
		f.Before = page.Next
		page, err = store.ListDeadLetters(ctx, f)
		require.NoError(t, err)
	}
	assert.Equal(t, want, forward, "forward, page by page")
	var backward []int64
	f.Before, f.After = "", page.Prev
	for f.After != "" {
		p, err := store.ListDeadLetters(ctx, f)
		require.NoError(t, err)
		backward = append(itemIDs(p), backward...)
		f.After = p.Prev
	}
	assert.Equal(t, want[:len(want)-len(page.Items)], backward, "back from the last page to the first")

	// Without a flood the first window stays small: a search from the
	// last of the words reads a few windows, not the day at once.
	statements.Reset()
	last := dlq.ListFilter{Tenants: both, Text: "connection refused", Before: dlq.Cursor{At: day.Add(2*time.Hour + 69*5*time.Minute), ID: 1 << 40}.Encode()}
	page, err = store.ListDeadLetters(ctx, last)
	require.NoError(t, err)
	assert.Equal(t, want[:dlq.ListPageSize], itemIDs(page), "the newest matches from the last word on")
	assert.Greater(t, windowReads(), 1, "a day without a flood is read window by window")
}
