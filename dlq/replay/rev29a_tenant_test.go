package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevPath29DraftLeavesOutAnotherTenantsDeadLetter: a selection of a
// person who may act in acme only, naming a dead letter of globex too,
// drafts acme's alone: no draft, no item of globex's dead letter.
func TestRevPath29DraftLeavesOutAnotherTenantsDeadLetter(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	mine := b.seedItem(t, "search.index_update", "rev29a-scope-acme", nil, `{"doc":1}`)
	theirs := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: "rev29a-scope-globex",
		Payload: []byte(`{"doc":2}`)})

	batch, err := b.replays.CreateDrafts(ctx, oncall, []int64{mine, theirs}, []string{"acme"}, false, allowAll, quarantine.RequestMeta{})
	require.NoError(t, err)
	drafts, err := b.replays.Batch(ctx, batch)
	require.NoError(t, err)
	var tenants []string
	for _, d := range drafts {
		tenants = append(tenants, d.Tenant)
	}
	assert.Equal(t, []string{"acme"}, tenants, "only the tenant the person may act in is drafted")
	items := b.itemsOf(t, drafts)
	assert.Contains(t, items, mine)
	assert.NotContains(t, items, theirs, "globex's dead letter is in no draft of an acme-only person")
	var named int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_items WHERE dead_letter_id = $1`, theirs).Scan(&named))
	assert.Zero(t, named)
}

// TestRevPath29TenantStopLeavesOtherTenantsRunning: an emergency stop of
// acme stops acme's approved request and nothing of globex: globex's
// approved request stays approved, its job waiting.
func TestRevPath29TenantStopLeavesOtherTenantsRunning(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	acme := b.request(t, []int64{b.seedItem(t, "search.index_update", "rev29a-stop-acme", nil, "{}")}, replay.SubmitInput{})
	globexID := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: "rev29a-stop-globex",
		Payload: []byte("{}")})
	globex := b.request(t, []int64{globexID}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, acme.Status)
	require.Equal(t, replay.StatusApproved, globex.Status)
	require.Equal(t, "globex", globex.Tenant)

	res, err := b.replays.StopAll(ctx, "acme", func(replaypolicy.Class) bool { return true }, approver1,
		replay.StopInput{Reason: "incident 29", Typed: replaypolicy.StopPhrase}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Stopped, "acme's one request")
	assert.Empty(t, res.Left)
	r, err := b.replays.Request(ctx, acme.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusCancelled, r.Status)
	r, err = b.replays.Request(ctx, globex.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusApproved, r.Status, "a stop of acme does not touch globex")
	assert.Equal(t, map[string]int{"pending": 1}, b.jobStates(t, globex.ID))
	status, held := b.deadLetterStatus(t, globexID, globex.ID)
	assert.Equal(t, "replay_requested", status)
	assert.True(t, held, "still held by globex's request")
}
