package replay_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev42EditThatTheDraftsRulesRefuseIsNotKept: in a draft, an item
// left out until edited (schema_invalid) is judged again with its edit,
// with the draft's own rules too: a manual draft that already holds an
// item to send may not take a second one (manual items are never replayed
// in bulk). The edit is refused, naming that rule, and nothing of it is
// kept.
func TestRev42EditThatTheDraftsRulesRefuseIsNotKept(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	refund := nats.Header{dlq.HeaderOriginalSubject: {"app.acme.orders.refund"}, dlq.HeaderOperationID: {"op-refund"}}
	live := b.seedItem(t, "orders.refund", "revive-live", refund, `{"order":1}`)
	bad := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "orders.refund", MsgID: "revive-bad", Class: "schema_invalid",
		Subject: "app.acme.orders.refund", OperationID: "op-bad", Payload: []byte(`{"order":2}`)})
	_, drafts := b.draft(t, oncall, live, bad)
	var draft int64
	for _, d := range drafts {
		items, err := b.replays.Items(ctx, d.ID, 10)
		require.NoError(t, err)
		if len(items) == 2 {
			draft = d.ID
		}
	}
	require.NotZero(t, draft, "one manual draft holds both: %+v", drafts)
	items := b.itemsOf(t, drafts)
	require.Equal(t, replaypolicy.CheckNeedsFix, items[bad].Check, items[bad].SkipReason)

	err := b.replays.EditPayload(ctx, draft, bad, oncall, replay.PayloadEdit{Payload: []byte(`{"order":2,"fixed":true}`), Reason: "fix schema"}, quarantine.RequestMeta{})
	require.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
	assert.Contains(t, quarantine.ErrorMessage(err), "the edit is not kept")
	assert.Contains(t, quarantine.ErrorMessage(err), "bulk")

	items = b.itemsOf(t, drafts)
	assert.Equal(t, replaypolicy.CheckNeedsFix, items[bad].Check, "left out as drafted")
	assert.False(t, items[bad].Edited)
	req, err := b.replays.Request(ctx, draft)
	require.NoError(t, err)
	assert.False(t, req.PayloadEdited)
}
