package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev43ReplayedItemsThatCameBackAreShown: a replay whose items all
// reached the broker is done, "3 replayed", full green; two of its
// messages failed at the consumer again and came back as new dead letters
// (linked by ingest, Dlq-Replay-Of). The request page said nothing of it.
// It now names, beside each such item, the dead letter it came back as
// (its link, status and error class), and counts them near the progress
// ("2 of 3 replayed items came back"); the replays list says "2 came
// back" on the request's row. A dead letter of another tenant that names
// an item's dead letter (which ingest never links, but the column holds
// what it is given) is not shown, nor is one stored before the replay was
// sent (it came back from an earlier replay of the same dead letter).
func TestRev43ReplayedItemsThatCameBackAreShown(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, _ := b.SignIn(t, "acme:oncall")
	_, err := b.JetStream.CreateStream(ctx, jetstreamConfig("APP", "app.>"))
	require.NoError(t, err)

	// Failed first well before the target stream's duplicate window: the
	// replays are not deferred.
	firstFailed := time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339)
	deadLetter := func(msgID string, hdr nats.Header) {
		t.Helper()
		hdr.Set(dlq.HeaderOriginalSubject, "app.acme.search.index_update")
		hdr.Set(dlq.HeaderOriginalMsgID, msgID)
		hdr.Set(dlq.HeaderFirstFailedAt, firstFailed)
		_, err := b.JetStream.PublishMsg(ctx, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(`{"doc":1}`), Header: hdr})
		require.NoError(t, err)
	}
	stored := func(where string, args ...any) []int64 {
		t.Helper()
		rows, err := b.DB.OwnerPool.Query(ctx, `SELECT id FROM dead_letters WHERE `+where+` ORDER BY id`, args...)
		require.NoError(t, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return ids
	}
	for i := range 3 {
		deadLetter(fmt.Sprint("back-", i), nats.Header{dlq.HeaderError: {"index timeout"}, dlq.HeaderErrorClass: {"transient"}})
	}
	wait.Until(t, "ingested", 30*time.Second, func() bool { return len(stored(`tenant = 'acme'`)) == 3 })
	items := stored(`tenant = 'acme'`)

	path := requestReplay(t, b, oncall, items...)
	id := mustID(t, path)
	w := replay.NewWorker(b.Replays, b.JetStream, authz.Authority{Access: b.Access, Directory: authz.NewDirectory(b.Pool)}, nil,
		replay.WorkerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	wait.Until(t, "the replay done", 30*time.Second, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		r, err := b.Replays.Request(ctx, id)
		require.NoError(t, err)
		return r.Status == replay.StatusDone
	})

	// The consumer fails on two of the replayed messages again: they come
	// back, linked to the dead letters they were replayed from.
	for i, why := range []string{"index mapping rejected", "index mapping rejected"} {
		deadLetter(fmt.Sprint("back-", i), nats.Header{dlq.HeaderError: {why}, dlq.HeaderErrorClass: {"permanent"},
			dlq.HeaderReplayOf: {strconv.FormatInt(items[i], 10)}})
	}
	wait.Until(t, "both linked", 30*time.Second, func() bool { return len(stored(`replay_of IS NOT NULL`)) == 2 })
	back := map[int64]int64{}
	for _, i := range items[:2] {
		ids := stored(`replay_of = $1`, i)
		require.Len(t, ids, 1)
		back[i] = ids[0]
	}
	// Another tenant's dead letter naming the third item's (ingest would
	// not link it; written by hand), and one of acme's naming it that was
	// stored an hour before the replay was sent.
	other := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: "back-2"})
	earlier := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "back-2"})
	_, err = b.DB.OwnerPool.Exec(ctx, `UPDATE dead_letters SET replay_of = $1, generation = 1 WHERE id = $2`, items[2], other)
	require.NoError(t, err)
	_, err = b.DB.OwnerPool.Exec(ctx, `UPDATE dead_letters SET replay_of = $1, generation = 1, received_at = now() - interval '1 hour' WHERE id = $2`,
		items[2], earlier)
	require.NoError(t, err)

	resp := b.Do(t, oncall, "GET", path, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	assert.Equal(t, "done", byID(d, "replay-status").AttrOr("data-status", ""), "the broker stored every replay: done, as before")
	assert.Equal(t, "3", text(byID(d, "progress-replayed")))
	count := byID(d, "replay-came-back")
	assert.Equal(t, 1, count.Length(), "the page counts the items that came back")
	assert.Equal(t, "2 of 3 replayed items came back as new dead letters.", text(byID(d, "replay-came-back-count")))
	assert.Contains(t, text(count), "the consumer failed on them again")
	assert.True(t, count.HasClass("alert--warn"), "amber")

	rows := byID(d, "replay-item")
	require.Equal(t, 3, rows.Length())
	for i, item := range items {
		r := rows.Eq(i)
		require.Equal(t, fmt.Sprintf("/deadletters/%d", item), r.Find(`[data-testid="replay-item-msgid"] a`).AttrOr("href", ""), "items in order")
		came := r.Find(`[data-testid="replay-item-came-back"]`)
		if i == 2 {
			assert.Zero(t, came.Length(), "neither another tenant's dead letter nor one stored before the replay: %s", text(came))
			continue
		}
		if !assert.Equal(t, 1, came.Length(), "item %d came back", i) {
			continue
		}
		assert.Contains(t, text(came), fmt.Sprintf("came back as #%d", back[item]))
		assert.Equal(t, fmt.Sprintf("/deadletters/%d", back[item]), came.Find(`[data-testid="replay-item-came-back-link"]`).AttrOr("href", ""))
		assert.Contains(t, text(came), "quarantined", "its status")
		assert.Contains(t, text(came), "permanent", "its error class")
		assert.True(t, came.HasClass("hint--warn"), "amber")
	}
	assert.Zero(t, d.Find(fmt.Sprintf(`a[href="/deadletters/%d"]`, other)).Length(), "another tenant's dead letter is linked nowhere")
	assert.Zero(t, d.Find(fmt.Sprintf(`a[href="/deadletters/%d"]`, earlier)).Length(), "nor one stored before the replay was sent")

	// The replays list says it on the request's row.
	resp = b.Do(t, oncall, "GET", "/replay/requests", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	listed := row(resp.Doc(t), id)
	require.Equal(t, 1, listed.Length())
	assert.Equal(t, "2 came back", text(listed.Find(`[data-testid="replay-row-came-back"]`)))
}

// TestRev43RequestNothingCameBackSaysNothing: a replay none of whose items
// came back shows no count and no item note, on its page or in the list;
// and a dead letter that came back more than once from one replay is
// named once, with a link to the replay chain that lists each.
func TestRev43RequestNothingCameBackSaysNothing(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, requester := b.SignIn(t, "acme:oncall")
	dl := seed(t, b, "acme", "search.index_update", "quiet-1", nil)
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{dl}, replay.SubmitInput{Reason: "reindex"})
	_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed', handed_at = now(), first_published_at = now() WHERE request_id = $1`, req.ID)
	require.NoError(t, err)
	_, err = b.DB.OwnerPool.Exec(ctx, `UPDATE replay_requests SET status = 'done' WHERE id = $1`, req.ID)
	require.NoError(t, err)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	d := b.Do(t, oncall, "GET", path, nil, nil).Doc(t)
	assert.Equal(t, "1", text(byID(d, "progress-replayed")))
	assert.Zero(t, byID(d, "replay-came-back").Length())
	assert.Zero(t, byID(d, "replay-item-came-back").Length())
	assert.Zero(t, row(b.Do(t, oncall, "GET", "/replay/requests", nil, nil).Doc(t), req.ID).Find(`[data-testid="replay-row-came-back"]`).Length())

	// Two came back from the one replay (a producer copying its identity,
	// or a consumer that dead-letters twice).
	twice := testfactory.DeadLetters(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "quiet-1"},
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "quiet-1"})
	_, err = b.DB.OwnerPool.Exec(ctx, `UPDATE dead_letters SET replay_of = $1, generation = 1 WHERE id = ANY($2)`, dl, twice)
	require.NoError(t, err)
	d = b.Do(t, oncall, "GET", path, nil, nil).Doc(t)
	assert.Equal(t, "1 of 1 replayed item came back as a new dead letter.", text(byID(d, "replay-came-back-count")), "one item, however many returns")
	came := byID(d, "replay-item-came-back")
	assert.Equal(t, 1, came.Length())
	assert.Contains(t, text(came), "came back more than once")
	assert.Equal(t, fmt.Sprintf("/deadletters/%d", twice[0]), came.Find(`[data-testid="replay-item-came-back-link"]`).AttrOr("href", ""), "the first of them")
	assert.Equal(t, 1, came.Find(fmt.Sprintf(`a[href="/deadletters/%d"]`, dl)).Length(), "the chain on the item's own page")
	assert.Equal(t, "1 came back", text(row(b.Do(t, oncall, "GET", "/replay/requests", nil, nil).Doc(t), req.ID).Find(`[data-testid="replay-row-came-back"]`)))
}
