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
)

// TestFixPort14RefusalJudgedForAClientGoneOnEveryAction: the other replay
// actions whose refusals are audited judge them, and record them, for a
// client that hung up before the service read anything (its context
// ended), as TestFixLeft13RefusalJudgedForAClientGone shows for approve,
// reject, cancel and edit: settling an item of one's own request, someone
// else's selection submitted, a selection of ids one may not replay
// drafted. What the rules let through changes nothing for such a client.
func TestFixPort14RefusalJudgedForAClientGoneOnEveryAction(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	gone, cancel := context.WithCancel(ctx)
	cancel()
	denied := func(action string, who quarantine.Actor) int {
		var n int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = $1 AND outcome = 'denied' AND actor_subject = $2`,
			action, who.Subject).Scan(&n))
		return n
	}

	id := b.seedItem(t, "email.send", "port14-gone", nats.Header{dlq.HeaderOperationID: {"op-port14-gone"}}, `{}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	err := b.replays.Reconcile(gone, req.ID, id, oncall, replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "checked"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "settle an item of one's own request: %v", err)
	assert.Equal(t, 1, denied("replay.item.reconciled", oncall), "the settle, refused, is audited")

	other := b.seedItem(t, "email.send", "port14-gone-batch", nats.Header{dlq.HeaderOperationID: {"op-port14-gone-batch"}}, `{}`)
	batch, drafts := b.draft(t, oncall, other)
	require.Len(t, drafts, 1)
	_, err = b.replays.Submit(gone, batch, approver1, replay.SubmitInput{Reason: "not mine"}, quarantine.RequestMeta{})
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.Canceled, "judged: someone else's selection")
	assert.Equal(t, 1, denied("replay.submit", approver1), "the submit, refused, is audited")
	_, err = b.replays.Submit(gone, batch, oncall, replay.SubmitInput{Reason: "mine"}, quarantine.RequestMeta{})
	require.ErrorIs(t, err, context.Canceled, "not refused: the client left, nothing changes")
	got, err := b.replays.Batch(ctx, batch)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, replay.StatusDraft, got[0].Status, "still a draft")

	third := b.seedItem(t, "email.send", "port14-gone-draft", nats.Header{dlq.HeaderOperationID: {"op-port14-gone-draft"}}, `{}`)
	never := func(string, replaypolicy.Class) bool { return false }
	_, err = b.replays.CreateDrafts(gone, approver2, []int64{third}, []string{"acme"}, false, never, quarantine.RequestMeta{})
	require.Error(t, err)
	assert.Equal(t, 1, denied("replay.draft", approver2), "the ids refused are audited")
	var drafted int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_requests WHERE requester_subject = $1`, approver2.Subject).Scan(&drafted))
	assert.Zero(t, drafted, "nothing drafted")
}
