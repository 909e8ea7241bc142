package dlq_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
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

// rev22dWindows records the time windows of the text search statements
// (the window's keys: every match of the window, then the newest).
type rev22dWindows struct {
	mu  sync.Mutex
	got [][2]time.Time
}

func (w *rev22dWindows) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(data.SQL, "OFFSET 0") {
		return ctx
	}
	for _, a := range data.Args {
		if na, ok := a.(pgx.NamedArgs); ok {
			lo, _ := na["win_lo"].(time.Time)
			hi, _ := na["win_hi"].(time.Time)
			w.mu.Lock()
			w.got = append(w.got, [2]time.Time{lo, hi})
			w.mu.Unlock()
		}
	}
	return ctx
}

func (w *rev22dWindows) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (w *rev22dWindows) take() [][2]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.got
	w.got = nil
	return out
}

// TestRevList22EditedCursorMakesTextSearchReadEveryMatch: a text search
// reads windows of time outward from its cursor, the first holding about
// a first window's dead letters, so that a common word costs one small
// window (textWindows: "in at most a dozen windows whatever from is (a
// page cursor is a link anyone can edit)"). The count of windows is
// bounded, their size is not: a Before cursor edited to 9999-12-30 (which
// DecodeCursor takes) starts the windows where nothing is stored; they
// grow there, empty, until the last one, which reaches back to year 1:
// every match of the scope in one statement (OFFSET 0: all of them, then
// the newest 51). The page is the same as the first page without a
// cursor, which reads a few hundred matches here; at a million dead
// letters and a common word, the edited link costs a statement that
// reads every matching row (seconds), each time it is opened.
func TestRevList22EditedCursorMakesTextSearchReadEveryMatch(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	now := time.Now()
	var letters []testfactory.Letter
	for i := range 2000 { // 100 a day for 20 days, every one with the words
		letters = append(letters, testfactory.Letter{Tenant: "acme", MsgID: fmt.Sprint("m-", i),
			At: now.Add(-time.Duration(i)*(24*time.Hour/100) - time.Minute), Error: fmt.Sprint("dial tcp: connection refused #", i)})
	}
	testfactory.DeadLetters(t, db.Pool, letters...)

	cfg := db.Pool.Config().Copy()
	windows := &rev22dWindows{}
	cfg.ConnConfig.Tracer = windows
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store := dlq.NewStore(pool)
	store.SetTextWindowRows(5)

	// How many matches the window statements of a page read: each reads
	// every match of its window.
	read := func(ws [][2]time.Time) (n int64) {
		for _, w := range ws {
			var c int64
			require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE tenant = 'acme'
AND left(error, 1024) ILIKE '%connection refused%' AND dead_lettered_at >= $1 AND dead_lettered_at < $2`, w[0], w[1]).Scan(&c))
			n += c
		}
		return n
	}

	f := dlq.ListFilter{Tenants: []string{"acme"}, Text: "connection refused"}
	plain, err := store.ListDeadLetters(ctx, f)
	require.NoError(t, err)
	plainRead := read(windows.take())

	edited := dlq.Cursor{At: time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC), ID: 1 << 40}.Encode()
	f.Before = edited
	page, err := store.ListDeadLetters(ctx, f)
	require.NoError(t, err)
	editedRead := read(windows.take())

	require.Len(t, plain.Items, dlq.ListPageSize)
	require.Len(t, page.Items, dlq.ListPageSize)
	assert.Equal(t, plain.Items[0].ID, page.Items[0].ID, "the same page: the newest matches")
	t.Logf("matches read: first page %d, the same page from an edited cursor %d", plainRead, editedRead)
	assert.LessOrEqual(t, editedRead, 2*plainRead,
		"the page from a cursor edited to 9999 read %d matches (every one stored) where the same page without it read %d", editedRead, plainRead)
}
