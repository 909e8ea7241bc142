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

// approvalRows counts the approvals recorded for request id.
func (b *replayBundle) approvalRows(t *testing.T, id int64) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM replay_approvals WHERE request_id = $1`, id).Scan(&n))
	return n
}

// TestRevRequest26ApproveRefusesWithoutTheReviewedIntent: an approval is
// bound to the intent the approver reviewed, so an approve that names no
// intent at all (a form without its hidden field, a script) approves
// nothing: it is a conflict, no approval is recorded and the request
// still waits. JudgeIntent's tests compare two different hashes only;
// with an empty reviewed intent taken for "whatever it is now", every
// test passed and such an approve approved the current intent, one the
// approver may never have seen.
func TestRevRequest26ApproveRefusesWithoutTheReviewedIntent(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "email.send", "rev26b-no-intent", nats.Header{dlq.HeaderOperationID: {"op-rev26b-no-intent"}}, `{"to":"x"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	for _, reviewed := range []string{"", "  "} {
		_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: reviewed}, quarantine.RequestMeta{})
		require.Error(t, err, "an approve naming intent %q", reviewed)
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	}
	assert.Zero(t, b.approvalRows(t, req.ID), "no approval was recorded")
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, got.Status, "the request still waits for an approver who reviewed it")
	assert.Empty(t, b.jobStates(t, req.ID), "nothing to publish")

	// The intent reviewed is what approves it.
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.True(t, d.Ready)
}

// TestRevRequest26ApprovedRequestPayloadCannotBeEdited: only a request
// not yet approved is edited. A rebuildable request is approved at its
// submit (its class asks for no approval) and its jobs are written; an
// edit of its payload afterwards, before any worker ran, is a conflict
// and changes nothing: the item still sends the payload received, the
// intent is the one approved, and the worker publishes those bytes. No
// test edited an approved request: with the status check gone every
// test passed, and the edit changed what an approved replay publishes
// (the intent stayed, as its UPDATE is guarded, so nobody saw it).
func TestRevRequest26ApprovedRequestPayloadCannotBeEdited(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dl := b.seedItem(t, "search.index_update", "rev26b-approved-edit", nil, `{"doc":1}`)
	req := b.request(t, []int64{dl}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	err := b.replays.EditPayload(ctx, req.ID, dl, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":"evil"}`), Reason: "late change"}, quarantine.RequestMeta{})
	require.Error(t, err, "an approved request is not edited")
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)

	p, err := b.replays.ItemPayload(ctx, req.ID, dl)
	require.NoError(t, err)
	assert.Equal(t, `{"doc":1}`, string(p.Data), "the item sends the payload received")
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, req.IntentHex(), got.IntentHex())
	assert.False(t, got.PayloadEdited)

	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	m, err := b.target.GetLastMsgForSubject(ctx, "app.acme.search.index_update")
	require.NoError(t, err)
	assert.Equal(t, `{"doc":1}`, string(m.Data), "what was approved is what was published")
	assert.Empty(t, m.Header.Get(replay.HeaderPayloadEdited))
}

// TestRevRequest26RevalidationAnswerWithoutAllowRefuses: at execution a
// revalidate item is published only on the service's explicit yes. An
// answer that is JSON but says nothing of "allow" ({}, a misspelt key, or
// null) is no yes: Revalidate refuses (false, with an error naming the
// expected answer), as it refuses silence. The tests answered only with
// a boolean allow: taking an answer without it for a yes passed them all.
func TestRevRequest26RevalidationAnswerWithoutAllowRefuses(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	for i, answer := range []string{`{}`, `{"allowed":true}`, `{"allow":null,"reason":"ok"}`} {
		subject := fmt.Sprintf("revalidate.rev26b.%d", i)
		sub, err := b.nc.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond([]byte(answer)) })
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Unsubscribe() })
		require.NoError(t, b.nc.Flush())
		reval := replay.NewNATSRevalidator(b.nc, subject, 5*time.Second)
		allow, _, err := reval.Revalidate(ctx, replay.RevalidateQuery{Tenant: "acme", ItemType: "accounts.permission_grant", Principal: "user:x"})
		assert.False(t, allow, "answer %s", answer)
		assert.ErrorContains(t, err, `is not {"allow": bool}`, "answer %s", answer)
	}
}
