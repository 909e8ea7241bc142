package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevGov16EditOnAStaleProcessIsRefused: once another process
// activates a newer replay policy, this one judges nothing (it approves,
// submits and replays nothing). An edit is a judgement too: it judges the
// item edited and sets the approvals the request needs, which the
// worker's run-time check of the request's people reads. On a stale
// process it is refused (conflict, saying why), and nothing changes: the
// payload, the intent, the approvals already given, the audit log. Before,
// the edit was kept, judged and counted by the rules this process had.
func TestRevGov16EditOnAStaleProcessIsRefused(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dl, id := b.editedAwaiting(t, "stale-edit")
	before, err := b.replays.Request(ctx, id)
	require.NoError(t, err)

	newer := policyAt(t, 400)
	activateElsewhere(t, b, newer)
	var audited int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log`).Scan(&audited))

	_, err = b.replays.ChangePayload(ctx, id, dl, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":3}`), Reason: "fix again"}, quarantine.RequestMeta{})
	require.Error(t, err, "a stale process keeps no edit")
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err))
	assert.True(t, strings.HasPrefix(quarantine.ErrorMessage(err), "the edit was not kept: "), quarantine.ErrorMessage(err))
	assert.Contains(t, quarantine.ErrorMessage(err), "is not the active one", "it says why")

	after, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, before.IntentHex(), after.IntentHex(), "the intent is as it was")
	assert.Equal(t, replay.StatusPendingApproval, after.Status)
	var payload string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT convert_from(payload, 'UTF8') FROM replay_items WHERE request_id = $1 AND dead_letter_id = $2`,
		id, dl).Scan(&payload))
	assert.JSONEq(t, `{"doc":2}`, payload, "the payload is the edit made on the active rules")
	var now int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log`).Scan(&now))
	assert.Equal(t, audited, now, "nothing was done, so nothing is audited as done")

	// The process's file reaches the active version (the deploy reached
	// it): the edit is kept.
	b.policy.Store(newer)
	require.NoError(t, b.replays.EditPayload(ctx, id, dl, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":3}`), Reason: "fix again"}, quarantine.RequestMeta{}))
}
