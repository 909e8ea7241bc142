package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestEveryItemRowNamesItsMessage walks an item through the steps that
// write a row about its dead letter — requested, its payload edited,
// approved, stopped (replay.item.cancelled); left out at submit
// (replay.item.blocked); replayed by a worker — and checks that every
// such row names the item's message id and operation id: the audit log's
// Message ID filter reads that column only.
func TestEveryItemRowNamesItsMessage(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	letter := func(itemType, msg, class string) testfactory.Letter {
		return testfactory.Letter{ItemType: itemType, MsgID: msg, OperationID: "op-" + msg, CorrelationID: "corr-" + msg,
			Principal: "user:7", Class: class, Payload: []byte(`{}`)}
	}
	// rowsOf are the actions of id's rows, and those of them that do not
	// name msg and its operation id.
	rowsOf := func(t *testing.T, id int64, msg string) (actions, unnamed []string) {
		t.Helper()
		rows, err := b.db.Pool.Query(ctx, `SELECT action, message_id = $2 AND operation_id = $3 FROM audit_log
            WHERE object_type = 'dead_letter' AND object_id = $1 ORDER BY seq`, fmt.Sprint(id), msg, "op-"+msg)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var action string
			var named bool
			require.NoError(t, rows.Scan(&action, &named))
			actions = append(actions, action)
			if !named {
				unnamed = append(unnamed, action)
			}
		}
		require.NoError(t, rows.Err())
		return actions, unnamed
	}

	// The two run one after the other: the second's worker executes every
	// approved request of the database, the first's too if it ran beside
	// it, which then had nothing left to stop (no replay.item.cancelled;
	// CI35).
	t.Run("Halted", func(t *testing.T) {
		id := testfactory.DeadLetter(t, b.db.Pool, letter("accounts.permission_grant", "rows-halted", ""))
		req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "grants lost"})
		require.Equal(t, replay.StatusPendingApproval, req.Status)
		require.NoError(t, b.replays.EditPayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Payload: []byte(`{"grant":"viewer"}`), Reason: "viewer is enough"},
			quarantine.RequestMeta{}))
		req, err := b.replays.Request(ctx, req.ID)
		require.NoError(t, err)
		_, err = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.NoError(t, b.replays.Stop(ctx, req.ID, approver1, replay.StopInput{Reason: "incident", Typed: replaypolicy.StopPhrase}, quarantine.RequestMeta{}))

		actions, unnamed := rowsOf(t, id, "rows-halted")
		require.Subset(t, actions, []string{"replay.item.requested", "replay.edit_payload", "replay.item.approved", "replay.item.cancelled"})
		assert.Empty(t, unnamed, "rows about the item without its message and operation id")
	})

	t.Run("LeftOutAndReplayed", func(t *testing.T) {
		ok := testfactory.DeadLetter(t, b.db.Pool, letter("search.index_update", "rows-replayed", ""))
		stale := testfactory.DeadLetter(t, b.db.Pool, letter("search.index_update", "rows-stale", "stale_version"))
		req := b.request(t, []int64{ok, stale}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status)
		run(t, b.worker(t, replay.WorkerConfig{Owner: "rows"}))
		b.waitFinished(t, req.ID)

		actions, unnamed := rowsOf(t, ok, "rows-replayed")
		require.Subset(t, actions, []string{"replay.item.requested", "replay.item.replayed"})
		assert.Empty(t, unnamed, "rows about the replayed item without its message and operation id")
		actions, unnamed = rowsOf(t, stale, "rows-stale")
		require.Subset(t, actions, []string{"replay.item.blocked"})
		assert.Empty(t, unnamed, "rows about the left-out item without its message and operation id")
	})
}
