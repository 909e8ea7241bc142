package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestReplayUsesWholeOversizedMessageID replays a dedupe item whose id is
// 8 KB (over what any B-tree entry holds): it is published under the whole
// id, the ledger keys it (by SHA-256), and the same id dead-lettered again
// is skipped as already replayed.
func TestReplayUsesWholeOversizedMessageID(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := "evt-" + strings.Repeat("0123456789abcdef", 512)
	other := id[:len(id)-1] + "X" // the same first 256 characters and more
	hdr := nats.Header{dlq.HeaderOriginalSubject: {"app.acme.analytics.event"}}
	first := b.seedItem(t, "analytics.event", id, hdr, `{"n":1}`)
	req := b.request(t, []int64{first}, replay.SubmitInput{})
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)

	got, err := b.target.GetLastMsgForSubject(ctx, "app.acme.analytics.event")
	require.NoError(t, err)
	assert.Equal(t, id, got.Header.Get(dlq.HeaderNatsMsgID), "published under the whole original id")
	var ledger int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_ledger WHERE msg_id = $1`, id).Scan(&ledger))
	assert.Equal(t, 1, ledger)

	again := b.seedItem(t, "analytics.event", id, hdr, `{"n":1}`)
	_, drafts := b.draft(t, oncall, again)
	items, err := b.replays.Items(ctx, drafts[0].ID, 1)
	require.NoError(t, err)
	assert.Contains(t, items[0].SkipReason, "already replayed")

	// An id that differs only past the indexed prefix is its own identity.
	near := b.seedItem(t, "analytics.event", other, hdr, `{"n":2}`)
	_, drafts = b.draft(t, oncall, near)
	items, err = b.replays.Items(ctx, drafts[0].ID, 1)
	require.NoError(t, err)
	assert.Empty(t, items[0].SkipReason)
}
