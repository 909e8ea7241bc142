package replay_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevReplay25AuditLogRecomputesAnIntentWithANote: the intent an
// approver approves covers the reconciliation note (IntentHash:
// "reconciliation-note", then the note), and an auditor recomputes it
// from the log as TestAuditLogRecomputesTheIntent does. That test's
// request has no note, so its note branch never runs: with the note left
// out of IntentHash every test passed. Here the request carries one (an
// unknown_effect dead letter needs it), and the intent recomputed from the
// log, note included, must be the one approved.
func TestRevReplay25AuditLogRecomputesAnIntentWithANote(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := t.Context()
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "intent-note-1",
		Class: "unknown_effect", Subject: "app.acme.search.index_update"})
	const note = "the index has no version 3 of it, checked 10:42"
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "reindex", ReconciliationNote: note})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	require.Equal(t, note, req.ReconciliationNote)
	_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)

	requested := b.loggedRows(t, `action = 'replay.request' AND object_type = 'replay_request' AND object_id = $1`, fmt.Sprint(req.ID))
	require.Len(t, requested, 1)
	r := requested[0]
	require.Equal(t, note, fmt.Sprint(r.after["reconciliation_note"]), "the log keeps the note")
	approved := b.loggedRows(t, `action = 'replay.item.approved' AND (after->>'request')::bigint = $1`, req.ID)
	require.Len(t, approved, 1)

	rate, err := r.after["rate"].(json.Number).Float64()
	require.NoError(t, err)
	fields := []string{"quarantine-replay-intent-v2", r.tenant, fmt.Sprint(r.after["class"]), fmt.Sprint(r.after["policy_version"]),
		fmt.Sprint(math.Float64bits(rate)), "reconciliation-note", note, unhex(t, approved[0].after["item_sha256"])}
	assert.Equal(t, req.IntentHex(), hex.EncodeToString(auditorHash(fields...)),
		"the intent recomputed from the log, its reconciliation note included, is the one approved")
}
