package replay_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestConflictingHeaderJudgedAlikeAtEveryStep (review 22b): a dead letter
// that named its operation id, original subject or (an advisory's) message
// id twice with values that disagree is flagged conflicting:<field> at
// ingest, and the rules block it for a person wherever they judge it: the
// page's verdict (dlq.ConflictingHeadersOfD in PostgreSQL) as the verdict
// on every header decoded in Go, the draft, the submit and the worker.
// The same value sent twice is a duplicate only, and replays as before.
func TestConflictingHeaderJudgedAlikeAtEveryStep(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := t.Context()
	ids := testfactory.DeadLetters(t, b.db.Pool,
		testfactory.Letter{ItemType: "search.index_update", MsgID: "conflict-op", Headers: map[string][]string{dlq.HeaderOperationID: {"op-a", "op-b"}}},
		testfactory.Letter{ItemType: "search.index_update", MsgID: "conflict-same", Headers: map[string][]string{dlq.HeaderOperationID: {"op-a", "op-a"}}},
		testfactory.Letter{ItemType: "search.index_update", MsgID: "conflict-subject",
			Headers: map[string][]string{"dlq-original-subject": {"app.acme.search.elsewhere"}}},
	)
	op, same, subject := ids[0], ids[1], ids[2]
	d, err := b.store.Get(ctx, same)
	require.NoError(t, err)
	require.Contains(t, d.Flags, "duplicate:operation_id")
	require.NotContains(t, d.Flags, "conflicting:operation_id", "one value, sent twice")

	// A give-up advisory's dead letter whose original carried two
	// Nats-Msg-Id values: its message id is read from the first.
	now := time.Now().UTC().Add(-time.Minute)
	ws, err := dlq.ParseWatchStreams("SEARCH")
	require.NoError(t, err)
	adv := dlq.Advisory{Type: "io.nats.jetstream.advisory.v1.max_deliver", Timestamp: now, Stream: "SEARCH", Consumer: "indexer", StreamSeq: 9, Deliveries: 5}
	raw := fmt.Sprintf(`{"type":%q,"stream":"SEARCH","consumer":"indexer","stream_seq":9,"deliveries":5}`, adv.Type)
	giveUp := dlq.ParseAdvisory(ws[0], adv, &dlq.Original{Subject: "app.acme.search.index_update", Data: []byte(`{"doc":9}`), Time: now.Add(-time.Second),
		Header: map[string][]string{dlq.HeaderNatsMsgID: {"doc-9", "doc-9b"}}}, []byte(raw), dlq.Received{Stream: "DLQ_ADVISORIES", Seq: 4, Time: now})
	require.Contains(t, giveUp.Flags, "conflicting:msg_id")
	_, err = b.store.Insert(ctx, []dlq.Record{giveUp})
	require.NoError(t, err)
	var advID int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT id FROM dead_letters WHERE source_kind = 'advisory' AND msg_id = 'doc-9'`).Scan(&advID))
	ids = append(ids, advID)

	page, every := judged(t, b.replays, b, ids...)
	for i := range ids {
		assert.Equal(t, every[i], page[i], "dead letter %d: the page judges as Go does", ids[i])
	}
	assert.Equal(t, replaypolicy.CheckConflictingHeader, page[0].Check, page[0].Reason)
	assert.Contains(t, page[0].Reason, `Dlq-Operation-Id "op-a" and "op-b", which disagree`)
	assert.Equal(t, replaypolicy.Go, page[1].Outcome, "the same operation id twice replays as before: %s", page[1].Reason)
	assert.Equal(t, replaypolicy.CheckConflictingHeader, page[2].Check, page[2].Reason)
	assert.Contains(t, page[2].Reason, `Dlq-Original-Subject "app.acme.search.index_update" and "app.acme.search.elsewhere", which disagree`)
	assert.Equal(t, replaypolicy.CheckConflictingHeader, page[3].Check, page[3].Reason)
	assert.Contains(t, page[3].Reason, `Nats-Msg-Id "doc-9" and "doc-9b", which disagree`)

	_, drafts := b.draft(t, oncall, ids...)
	items := b.itemsOf(t, drafts)
	for i, id := range []int64{op, subject, advID} {
		assert.Equal(t, replaypolicy.CheckConflictingHeader, items[id].Check, "dead letter %d at draft: %s", id, items[id].SkipReason)
		assert.Contains(t, items[id].SkipReason, "which disagree", "dead letter %d (case %d)", id, i)
	}
	assert.Empty(t, items[same].SkipReason, "the same operation id twice")

	// Flags are set at ingest only; to judge a submit and an execution of
	// a dead letter flagged after its draft was made, its row is given
	// what ingest gives such a dead letter.
	flag := func(id int64) {
		_, err := b.db.Pool.Exec(ctx, `UPDATE dead_letters SET flags = array_append(flags, 'conflicting:operation_id'),
            headers = headers || '[{"name":"Dlq-Operation-Id","value":"op-late-a"},{"name":"Dlq-Operation-Id","value":"op-late-b"}]'::jsonb
            WHERE id = $1`, id)
		require.NoError(t, err)
	}

	t.Run("Submit", func(t *testing.T) {
		late := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "conflict-submit"})
		batch, _ := b.draft(t, oncall, late)
		flag(late)
		_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
		var refused *replay.RefusedError
		require.ErrorAs(t, err, &refused)
		assert.Contains(t, fmt.Sprint(refused.Reasons), `Dlq-Operation-Id "op-late-a" and "op-late-b", which disagree`)
	})

	t.Run("Execution", func(t *testing.T) {
		late := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "conflict-execution"})
		req := b.request(t, []int64{late}, replay.SubmitInput{Reason: "reindex"})
		require.Equal(t, replay.StatusApproved, req.Status, "rebuildable: no approval")
		flag(late)
		b.runUntilDone(t, req.ID)
		j := b.job(t, req.ID, late)
		assert.Equal(t, string(replay.JobBlocked), j.State, j.Result)
		assert.Contains(t, j.Result, `Dlq-Operation-Id "op-late-a" and "op-late-b", which disagree`)
	})
}
