package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixLeft13ListedLapse: the replays page says what of a request
// expires at its Expires: the draft (REPLAY_DRAFT_TTL), the first approval
// of one waiting for approval, or the time an approved request that has
// not started may start by; nothing of a request with nothing to expire.
func TestFixLeft13ListedLapse(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	cfg := b.config(t)
	cfg.DraftTTL = time.Hour
	b.replays = replay.New(b.db.Pool, cfg)

	_, drafts := testfactory.Draft(t, b.replays, oncall, b.seedItem(t, "search.index_update", "lapse-draft", nil, "{}"))
	l := listedAs(t, b, drafts[0].ID)
	require.NotNil(t, l.Expires)
	assert.Equal(t, replay.LapseDraft, l.Lapse)
	assert.WithinDuration(t, drafts[0].CreatedAt.Add(time.Hour), *l.Expires, time.Millisecond)

	msgID := "lapse-manual"
	req := b.request(t, []int64{b.seedItem(t, "orders.refund", msgID, nil, "{}")}, replay.SubmitInput{})
	l = listedAs(t, b, req.ID)
	assert.Nil(t, l.Expires, "waiting, no approval yet: nothing of it expires")
	assert.Equal(t, replay.Lapse(""), l.Lapse)
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	l = listedAs(t, b, req.ID)
	require.NotNil(t, l.Expires)
	assert.Equal(t, replay.LapseApproval, l.Lapse, "waiting: its first approval lapses")

	d, err := b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	l = listedAs(t, b, req.ID)
	require.Equal(t, replay.StatusApproved, l.Status)
	require.NotNil(t, l.Expires)
	assert.Equal(t, replay.LapseStart, l.Lapse, "approved, not started: the time it may start by")
}
