package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// Review rev-audit. The approval names an intent hash (IntentHash: tenant,
// class, policy version, rate, note, and per item its ids, correlation id,
// subject, payload hash and headers), but the log holds only part of what
// it covers: the request row has no policy version, and the item rows
// (replay.item.requested/approved) carry the payload hash but neither the
// headers nor a hash of them, nor the correlation id. An auditor reading
// the log (or an export, after retention purged the dead letters) cannot
// recompute the intent, so cannot tell which headers were approved; only
// replay_items, a table the runtime role may UPDATE, says.
func TestRevAuditLogNamesWhatTheIntentCovers(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "email.send", "rev-audit-1", nats.Header{dlq.HeaderOperationID: {"op-rev-audit-1"}, "X-Route": {"eu-1"}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)

	afterOf := func(action, objectType, objectID string) map[string]any {
		t.Helper()
		var raw []byte
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT coalesce(after, 'null') FROM audit_log
            WHERE action = $1 AND object_type = $2 AND object_id = $3 ORDER BY seq DESC LIMIT 1`, action, objectType, objectID).Scan(&raw))
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		return m
	}
	requestRow := afterOf("replay.request", "replay_request", fmt.Sprint(req.ID))
	assert.Contains(t, requestRow, "policy_version", "the intent covers the policy version: %v", requestRow)
	itemRow := afterOf("replay.item.approved", "dead_letter", fmt.Sprint(id))
	var headers bool
	for k := range itemRow {
		headers = headers || strings.Contains(k, "header")
	}
	assert.True(t, headers, "the intent covers the item's headers; its approved row has %v", itemRow)
}

// Review rev-audit. The worker's replay.item.replayed row names the
// broker's answer (stream, seq, duplicate) but not what was published (the
// payload hash it sent, which an edit may have changed since the dead
// letter was stored) nor when: the row's at is when the outcome was
// recorded, after the PubAck, and the job's first attempt time
// (first_attempt_at, what the duplicate window is judged from) stays in
// replay_jobs, a table the runtime role may UPDATE.
func TestRevAuditReplayedRowSaysWhatWasPublishedAndWhen(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "rev-audit-pub-1", nil, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitFinished(t, req.ID)

	var raw []byte
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT coalesce(after, 'null') FROM audit_log
        WHERE action = 'replay.item.replayed' AND object_type = 'dead_letter' AND object_id = $1`, fmt.Sprint(id)).Scan(&raw))
	var after map[string]any
	require.NoError(t, json.Unmarshal(raw, &after))
	assert.Contains(t, after, "payload_sha256", "what was published: %v", after)
	var when bool
	for k := range after {
		when = when || strings.Contains(k, "published") || strings.Contains(k, "attempt")
	}
	assert.True(t, when, "when it was published: %v", after)
}
