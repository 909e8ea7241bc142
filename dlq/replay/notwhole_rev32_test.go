package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevIngest32NotWholeLeftOutOfEveryDraft: a dead letter whose
// producer could not send its original whole (dlq.Publish said so in
// Dlq-Left-Out or Dlq-Unsendable-Headers, and ingest flagged it) was
// drafted like any other: a replay would have published an original
// without its headers, or with a payload it never had, under the
// original's identity. Now the draft leaves each out, naming the flag,
// whatever the flag's part; a dead letter without one drafts as before.
func TestRevIngest32NotWholeLeftOutOfEveryDraft(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	letter := func(msgID, flag string) int64 {
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID,
			CorrelationID: "corr-" + msgID, Payload: []byte(`{"doc":"` + msgID + `"}`)})
		if flag != "" {
			_, err := b.db.Pool.Exec(ctx, `UPDATE dead_letters SET flags = array_append(flags, $2) WHERE id = $1`, id, flag)
			require.NoError(t, err)
		}
		return id
	}
	headers, block, names, clean := letter("nw-1", "left_out:headers"), letter("nw-2", "left_out:header_block"),
		letter("nw-3", "unsendable:header_name"), letter("nw-4", "")

	_, drafts := b.draft(t, oncall, headers, block, names, clean)
	reasons := skipReasonsOf(t, b.replays, drafts)
	assert.Contains(t, reasons[headers], "flag left_out:headers")
	assert.Contains(t, reasons[block], "flag left_out:header_block")
	assert.Contains(t, reasons[names], "flag unsendable:header_name")
	assert.Empty(t, reasons[clean], "a dead letter without the flag drafts as before")
}
