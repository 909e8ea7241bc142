package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevExec26WorkerBlockedItemIsAuditedAsNotDone: an item the worker
// blocks at execution (a revalidate item its owning service refuses) is one
// the auditor's "what went wrong" filter finds: its replay.item.blocked
// row, written by the worker, has outcome error, never ok, while the
// request's item was approved and nothing of it was published.
func TestRevExec26WorkerBlockedItemIsAuditedAsNotDone(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "accounts.permission_grant", "rev26c-blocked", nats.Header{dlq.HeaderPrincipal: {"user:someone"}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)

	sub, err := b.nc.Subscribe("rev26c.revalidate", func(m *nats.Msg) { _ = m.Respond([]byte(`{"allow": false, "reason": "revoked"}`)) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	run(t, b.worker(t, replay.WorkerConfig{}, replay.NewNATSRevalidator(b.nc, "rev26c.revalidate", 5*time.Second))) // the owning service says no: the item is blocked
	b.waitStatus(t, req.ID, replay.StatusDoneWithProblems)
	require.Equal(t, "blocked", b.job(t, req.ID, id).State)
	assert.Zero(t, b.onSubject(t, "app.acme.accounts.permission_grant"), "nothing published")

	rows, err := b.db.Pool.Query(ctx, `SELECT outcome FROM audit_log
        WHERE action = 'replay.item.blocked' AND object_type = 'dead_letter' AND object_id = $1 AND actor_subject LIKE 'replay-worker:%'`,
		fmt.Sprint(id))
	require.NoError(t, err)
	var outcomes []string
	for rows.Next() {
		var o string
		require.NoError(t, rows.Scan(&o))
		outcomes = append(outcomes, o)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"error"}, outcomes, "the worker's row of the blocked item says it was not done")
}
