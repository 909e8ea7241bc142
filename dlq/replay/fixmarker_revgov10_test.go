package replay_test

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

// TestRevGov10RequesterOwnFixMarkerReplaysSchemaInvalidAlone: a
// schema_invalid dead letter is refused ("not before a producer or
// contract fix"); its payload edited, it needs one approver who is not the
// requester, who reads the diff. A fix marker unlocks it with nobody
// else's word: the on-call who wants the replay records "fixed at now" for
// the item type themselves (deadletter:fix, the same role that requests)
// and replays it at once, approved at submit ("no approval needed") with
// no second person ever seeing that the refused error class was lifted on
// their own say-so. A marker recorded by the requester (SamePerson) should
// not count for their own request without an approver, as an edit does
// not.
func TestRevGov10RequesterOwnFixMarkerReplaysSchemaInvalidAlone(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "fix-self",
		Class: "schema_invalid", Payload: []byte(`{"doc":1}`), At: time.Now().Add(-time.Hour)})

	_, err := b.store.RecordFix(ctx, id, dlq.FixInput{Scope: dlq.FixItemType, FixedAt: time.Now().Add(-time.Minute), Ref: "v9.9.9"},
		oncall, quarantine.RequestMeta{}, time.Now())
	require.NoError(t, err)

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, 1, req.ItemCount, "the requester's own marker lets the item in")
	assert.Equal(t, replay.StatusPendingApproval, req.Status,
		"a schema_invalid item unlocked only by its requester's own fix marker went without any approver")
}
