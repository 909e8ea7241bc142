package replay_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// Review (rev-hostile): a message id (or operation id) that is not valid
// UTF-8, or holds a NUL (a binary id, as a raw producer can send it), is
// stored with U+FFFD in its place (flag not_utf8:msg_id, the exact bytes
// only among the raw headers), and a replay publishes that stored text as
// its Nats-Msg-Id: another identity to the target stream's duplicate
// window and to every consumer's dedupe, the very hazard for which a line
// break inside an id is left out of a replay ("holds a line break inside
// its value"). Such an item should be left out too (or sent with its
// exact bytes).
func TestReviewReplayOfNonUTF8MessageIDIsLeftOut(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	binID := b.seedItem(t, "search.index_update", "bin-\xff\xfe-id", nil, "{}")
	binID2 := b.seedItem(t, "search.index_update", "bin-\x80-id", nil, "{}") // another message, another id
	nulID := b.seedItem(t, "search.index_update", "nul-\x00-id", nil, "{}")
	fine := b.seedItem(t, "search.index_update", "fine", nil, "{}")
	// The original subject and the operation id likewise: flagged
	// not_utf8:original_subject / not_utf8:operation_id at ingest, and the
	// replay goes to another subject, under another idempotency key.
	badSubject := b.seedItem(t, "search.index_update", "bad-subject",
		nats.Header{dlq.HeaderOriginalSubject: {"app.acme.search.index_update.\xff"}}, "{}")
	badOp := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "bad-op", OperationID: "op-\xff", Payload: []byte("{}")})

	var stored, stored2 string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT msg_id FROM dead_letters WHERE id = $1`, binID).Scan(&stored))
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT msg_id FROM dead_letters WHERE id = $1`, binID2).Scan(&stored2))
	// strings.ToValidUTF8 folds a run of bad bytes into one U+FFFD: two
	// different ids become one, which a replay publishes as Nats-Msg-Id
	// (the second replay is dropped by the target's duplicate window).
	t.Logf("stored msg ids %q and %q", stored, stored2)
	assert.NotEqual(t, stored, stored2, "two different message ids stored as one")

	_, drafts := testfactory.Draft(t, b.replays, oncall, binID, binID2, nulID, fine, badSubject, badOp)
	reasons := skipReasonsOf(t, b.replays, drafts)
	assert.Empty(t, reasons[fine])
	assert.NotEmpty(t, reasons[binID], "a replay would publish under %q, not the id the original carried", stored)
	assert.NotEmpty(t, reasons[nulID], "a replay would publish under another id than the original's")
	assert.NotEmpty(t, reasons[badSubject], "a replay would publish to another subject than the original's")
	assert.NotEmpty(t, reasons[badOp], "a replay would carry another operation id than the original's")
	for _, id := range []int64{binID, binID2, nulID, badSubject, badOp} {
		assert.Contains(t, reasons[id], "re-publish it from the producer", "item %d", id)
	}
	assert.Contains(t, reasons[binID], "Nats-Msg-Id")
	assert.Contains(t, reasons[badOp], "Dlq-Operation-Id")
	assert.Contains(t, reasons[badSubject], "the original subject")
}
