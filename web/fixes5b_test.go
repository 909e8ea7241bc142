package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestExpiredDraftSaysWhyItIsVoid: a draft left for longer than the draft
// time to live is voided by the sweeper; its page says of its approvals
// that it was voided before any, with the stored reason (it expired), and
// the replays page's "never accepted" and "none asked" say that reason
// when pointed at.
func TestExpiredDraftSaysWhyItIsVoid(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, requester := b.SignIn(t, "acme:oncall")
	_, drafts := testfactory.Draft(t, b.Replays, requester.Actor, seed(t, b, "acme", "ledger.delete", "f5b-led-1", nil))
	require.Len(t, drafts, 1)
	d := drafts[0]
	_, err := b.DB.OwnerPool.Exec(context.Background(), `UPDATE replay_requests SET created_at = created_at - interval '2 days' WHERE id = $1`, d.ID)
	require.NoError(t, err)
	_, err = b.Replays.ExpireDrafts(context.Background())
	require.NoError(t, err)
	got, err := b.Replays.Request(context.Background(), d.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusVoid, got.Status)
	require.Contains(t, got.StatusReason, "expired")

	page := b.Do(t, client, "GET", fmt.Sprintf("/replay/requests/%d", d.ID), nil, nil).Doc(t)
	assert.Contains(t, textOf(page, `[data-testid="replay-approvals-not-needed"]`), "voided before any approval ("+got.StatusReason+")")
	list := b.Do(t, client, "GET", "/replay/requests", nil, nil).Doc(t)
	for _, cell := range []string{"replay-row-submitted", "replay-row-approvals"} {
		title, _ := list.Find(`[data-testid="` + cell + `"] span`).First().Attr("title")
		assert.Equal(t, "Void: "+got.StatusReason, title, cell)
	}
}
