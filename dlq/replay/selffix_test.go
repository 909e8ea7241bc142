package replay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestOwnFixMarkerReplaysWithOneApprover: a schema_invalid item let in by
// its requester's own fix marker waits for one approver, the request says
// why, and once another person approved it the worker publishes it.
func TestOwnFixMarkerReplaysWithOneApprover(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "self-fix-approved",
		Class: "schema_invalid", Payload: []byte(`{"doc":2}`), At: time.Now().Add(-time.Hour)})
	_, err := b.store.RecordFix(ctx, id, dlq.FixInput{Scope: dlq.FixItemType, FixedAt: time.Now().Add(-time.Minute), Ref: "v9.9.9"},
		oncall, quarantine.RequestMeta{}, time.Now())
	require.NoError(t, err)

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	assert.Equal(t, 1, req.ApprovalsNeeded)
	d, err := b.replays.Decision(ctx, req.ID, approver1)
	require.NoError(t, err)
	assert.Contains(t, d.Reason, `the fix marker of item type "search.index_update" that lets it replay was recorded by the requester`)

	_, err = b.replays.Approve(ctx, req.ID, oncall, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "the requester approves their own fix")
	d, err = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Equal(t, 1, b.publishedAs(t, "self-fix-approved"))
}

// TestOwnFixMarkerAfterApprovalBlocksAtExecution (invariant 11): a request
// approved at submit on a fix someone else recorded; before the worker
// runs it, the requester records a newer fix, the latest one the rules
// read. Nobody but the requester vouches for what lets the item go now,
// so the worker does not publish it and says why.
func TestOwnFixMarkerAfterApprovalBlocksAtExecution(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "self-fix-late",
		Class: "schema_invalid", Payload: []byte(`{"doc":3}`), At: time.Now().Add(-time.Hour)})
	_, err := b.store.RecordFix(ctx, id, dlq.FixInput{Scope: dlq.FixItemType, FixedAt: time.Now().Add(-10 * time.Minute), Ref: "v9.9.8"},
		approver1, quarantine.RequestMeta{}, time.Now())
	require.NoError(t, err)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status, "a fix someone else recorded lets it go at once")

	_, err = b.store.RecordFix(ctx, id, dlq.FixInput{Scope: dlq.FixItemType, FixedAt: time.Now().Add(-time.Minute), Ref: "v9.9.9"},
		oncall, quarantine.RequestMeta{}, time.Now())
	require.NoError(t, err)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitFinished(t, req.ID)
	assert.Zero(t, b.publishedAs(t, "self-fix-late"))
	text := b.jobsText(t, req.ID)
	assert.True(t, strings.Contains(text, "that the requester recorded, and nobody else approved the request"), text)
}
