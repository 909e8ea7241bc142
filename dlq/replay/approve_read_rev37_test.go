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

// auditRows counts every row of the audit log.
func (b *replayBundle) auditRows(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log`).Scan(&n))
	return n
}

// TestRev37ApprovalRefusedAfterAnEditThereAndBack: an approver reads a
// request whose payload was edited to {"doc":2} "fix"; the requester then
// edits it to {"doc":3} and back to {"doc":2} with another reason. The
// intent is the one read again (an edit's reason is not part of it), and
// an approval bound to the intent alone approved an edit reason its
// approver never saw. Bound to the version read as well, it is refused
// as a changed intent is (a conflict, nothing recorded, audited alike),
// and an approval after reading the request again goes.
func TestRev37ApprovalRefusedAfterAnEditThereAndBack(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dl, id := b.editedAwaiting(t, "rev37-aba")
	read, err := b.replays.Request(ctx, id)
	require.NoError(t, err)

	require.NoError(t, b.replays.EditPayload(ctx, id, dl, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":3}`), Reason: "x"}, quarantine.RequestMeta{}))
	require.NoError(t, b.replays.EditPayload(ctx, id, dl, oncall,
		replay.PayloadEdit{Payload: []byte(`{"doc":2}`), Reason: "a different justification"}, quarantine.RequestMeta{}))
	now, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	require.Equal(t, read.IntentHex(), now.IntentHex(), "there and back: the intent read is the request's again")
	require.Greater(t, now.Version, read.Version, "each edit moved the version")

	before := b.auditRows(t)
	_, err = b.replays.Approve(ctx, id, approver1, replay.ApproveInput{IntentHex: read.IntentHex(), Version: read.Version}, quarantine.RequestMeta{})
	require.Error(t, err, "an approval of the page read before the edits")
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	assert.Contains(t, quarantine.ErrorMessage(err), "the request changed since you read it: read it again")
	refusedRead := b.auditRows(t) - before
	assert.Zero(t, b.approvalRows(t, id), "no approval was recorded")
	got, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, got.Status, "the request still waits for an approver who read it")
	assert.Empty(t, b.jobStates(t, id), "nothing to publish")

	before = b.auditRows(t)
	_, err = b.replays.Approve(ctx, id, approver1, replay.ApproveInput{IntentHex: strings.Repeat("0", 64), Version: now.Version}, quarantine.RequestMeta{})
	require.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	assert.Equal(t, b.auditRows(t)-before, refusedRead, "audited as an approval of a changed intent is")

	// Read again: the edit reason the approver now reads is the one the
	// request gives, and their approval of that page goes.
	items, err := b.replays.Items(ctx, id, 10)
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, "a different justification", items[0].EditReason)
	d, err := b.replays.Approve(ctx, id, approver1, replay.ApproveInput{IntentHex: now.IntentHex(), Version: now.Version}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.True(t, d.Ready, "the one approval its edit asks for")
}
