package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevRetention33PurgeTakesTheHeadersAlong: a draft copies into its
// items the headers each would send (a customer's address, a token), and
// retention took the dead letters and the edited payloads but left those
// copies in every request that ever named them. They go with the dead
// letter now, on both paths (a day emptied whole, a batch of rows), while
// the closed request still reads.
func TestRevRetention33PurgeTakesTheHeadersAlong(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}
	wholeDay, rowsDay := r.daysAgo(120), r.daysAgo(130)
	withHeader := func(at time.Time, msgID string) int64 {
		return testfactory.DeadLetters(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: msgID, At: at,
			Headers: map[string][]string{"X-Customer-Email": {"a@example.com"}}})[0]
	}
	gone := []int64{withHeader(wholeDay, "rr33-whole"), withHeader(rowsDay, "rr33-rows")}
	named := r.letters(t, 1, "acme", "search.index_update", rowsDay, dlq.StatusQuarantined)

	_, drafts := testfactory.Draft(t, r.replays, oncall, gone...)
	require.Len(t, drafts, 1)
	require.NoError(t, r.replays.Cancel(ctx, drafts[0].ID, oncall, "not needed", quarantine.RequestMeta{}))
	require.Equal(t, 2, r.headerCopies(t, gone, "a@example.com"), "the cancelled draft's items hold the headers they would send")
	testfactory.Draft(t, r.replays, oncall, named...) // open: the older day goes in rows

	pass := r.pass(t)
	emptied, batches := runKinds(pass, wholeDay)
	require.Equal(t, 1, emptied, "the younger day is emptied whole: %+v", pass.Runs)
	require.Equal(t, 1, batches, "the older day's dead letter goes in a batch of rows: %+v", pass.Runs)
	require.Empty(t, r.remaining(t, gone))

	assert.Zero(t, r.headerCopies(t, gone, "a@example.com"), "no replay item keeps the headers of a dead letter retention removed")
	v, err := r.replays.View(ctx, drafts[0].ID, oncall, replay.ViewOptions{Items: 10})
	require.NoError(t, err, "the closed request still reads")
	assert.Len(t, v.Items, 2)
}

// headerCopies counts the replay items naming ids whose headers hold text.
func (r *retention) headerCopies(t *testing.T, ids []int64, text string) int {
	t.Helper()
	var n int
	require.NoError(t, r.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM replay_items WHERE dead_letter_id = ANY($1) AND strpos(headers::text, $2) > 0`, ids, text).Scan(&n))
	return n
}
