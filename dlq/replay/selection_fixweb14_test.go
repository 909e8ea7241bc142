package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixWeb14DraftOfADeadLetterNamedTwiceTakesItOnce: a selection naming
// a dead letter twice (a scripted form, two checkboxes of one row) is the
// same selection as naming it once: one item of it, counted once, and no
// failure of the draft's insert.
func TestFixWeb14DraftOfADeadLetterNamedTwiceTakesItOnce(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	doc := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "fw14-doc", Payload: []byte(`{}`)})
	other := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "fw14-other", Payload: []byte(`{}`)})

	_, drafts := b.draft(t, oncall, doc, other, doc)
	require.Len(t, drafts, 1)
	assert.Equal(t, 2, drafts[0].ItemCount, "each dead letter once")
	items, err := b.replays.Items(ctx, drafts[0].ID, 10)
	require.NoError(t, err)
	var ids []int64
	for _, it := range items {
		ids = append(ids, it.DeadLetterID)
	}
	assert.ElementsMatch(t, []int64{doc, other}, ids)

}

// TestFixWeb14ListCursorPastInt32: the replays page's cursor is a request
// id (bigint): one above 2^31-1 lists the requests below it, as any other.
func TestFixWeb14ListCursorPastInt32(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "fw14-cursor", Payload: []byte(`{}`)})
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	for _, mine := range []bool{true, false} {
		got, _, err := b.replays.List(ctx, replay.ListFilter{Tenants: []string{"acme"}, Viewer: oncall, MineFirst: mine,
			After: replay.Cursor{ID: 1 << 31, Own: mine}, Limit: 10})
		require.NoError(t, err, "mine first %v", mine)
		var ids []int64
		for _, l := range got {
			ids = append(ids, l.ID)
		}
		assert.Contains(t, ids, req.ID, "mine first %v: the request is before the cursor", mine)
	}
}
