package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// requestRow is one audit_log row about a replay request, as an auditor
// reads it: who (the subject: a worker has no email), in which tenant,
// what, why, and the status before and after.
type requestRow struct {
	Seq                     int64
	Subject, Email, Tenant  string
	Action, Reason, Outcome string
	Before, After           map[string]any
}

// requestRows returns the audit rows about replay request id, oldest first.
func (b *replayBundle) requestRows(t *testing.T, id int64) []requestRow {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT seq, actor_subject, actor_email, tenant, action, reason, outcome,
            coalesce(before, 'null'), coalesce(after, 'null')
        FROM audit_log WHERE object_type = 'replay_request' AND object_id = $1 ORDER BY seq`, fmt.Sprint(id))
	require.NoError(t, err)
	defer rows.Close()
	var out []requestRow
	for rows.Next() {
		var r requestRow
		var before, after []byte
		require.NoError(t, rows.Scan(&r.Seq, &r.Subject, &r.Email, &r.Tenant, &r.Action, &r.Reason, &r.Outcome, &before, &after))
		require.NoError(t, json.Unmarshal(before, &r.Before))
		require.NoError(t, json.Unmarshal(after, &r.After))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// actionRunning is the action of a request's move to running (spelled
// here as the log spells it).
const actionRunning = "replay.running"

// ofAction are the rows of rows with action.
func ofAction(rows []requestRow, action string) []requestRow {
	var out []requestRow
	for _, r := range rows {
		if r.Action == action {
			out = append(out, r)
		}
	}
	return out
}

// requireChainVerifies checks that the audit chain, with the rows the test
// made, still verifies.
func (b *replayBundle) requireChainVerifies(t *testing.T) {
	t.Helper()
	res, err := audit.Verify(context.Background(), b.db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	require.True(t, res.OK(), "the audit chain verifies: %s", res)
}

// TestRunningRequestHasItsAuditRow: a request moves from approved to
// running when a publish of it may have landed, and that change writes its
// audit row in the record's transaction: one row, however many records
// (here three claims of one job each) find the request running, by the
// worker that moved it, in the request's tenant, from approved to running,
// naming the job whose publish started it. The chain still verifies.
func TestRunningRequestHasItsAuditRow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ids := []int64{
		b.seedItem(t, "search.index_update", "running-audit-1", nil, "{}"),
		b.seedItem(t, "search.index_update", "running-audit-2", nil, "{}"),
		b.seedItem(t, "search.index_update", "running-audit-3", nil, "{}"),
	}
	req := b.request(t, ids, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status, "rebuildable needs no approver")
	run(t, b.worker(t, replay.WorkerConfig{Owner: "w-running", Batch: 1}))
	require.Equal(t, replay.StatusDone, b.waitFinished(t, req.ID).Status, b.jobsText(t, req.ID))

	require.True(t, audit.KnownAction(actionRunning), "the audit log's filter offers the action")
	rows := b.requestRows(t, req.ID)
	running := ofAction(rows, actionRunning)
	require.Len(t, running, 1, "one row for the one move to running; the request's rows: %+v", rows)
	r := running[0]
	assert.Equal(t, "replay-worker:w-running", r.Subject, "the worker that recorded the publish moved it")
	assert.Empty(t, r.Email)
	assert.Equal(t, "acme", r.Tenant)
	assert.Equal(t, string(audit.OutcomeOK), r.Outcome)
	assert.Equal(t, map[string]any{"status": string(replay.StatusApproved)}, r.Before)
	assert.Equal(t, string(replay.StatusRunning), r.After["status"], "after: %v", r.After)
	dl, ok := r.After["dead_letter"].(float64)
	require.True(t, ok, "the row names the dead letter whose publish started it: %v", r.After)
	assert.Contains(t, ids, int64(dl))
	assert.Contains(t, r.After, "job")
	assert.Contains(t, r.After, "first_attempt_at", "when that publish went: %v", r.After)
	assert.Contains(t, r.Reason, fmt.Sprintf("dead letter %d", int64(dl)), "the reason says what started it")

	approved, done := ofAction(rows, audit.ActionReplayApproved), ofAction(rows, audit.ActionReplayDone)
	require.Len(t, approved, 1)
	require.Len(t, done, 1)
	assert.Less(t, approved[0].Seq, r.Seq, "approved, then running")
	assert.Less(t, r.Seq, done[0].Seq, "running, then done")
	b.requireChainVerifies(t)
}

// TestRepublishRunsRequestAgainWithAuditRow: a person who settles an item
// of a request done with problems by publishing it again moves the
// request back to running; that move writes its own audit row about the
// request, by that person, from done_with_problems to running, naming the
// item, beside the item's reconciled row.
func TestRepublishRunsRequestAgainWithAuditRow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "running-again-1", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.db.Pool, req.ID)
	require.NoError(t, b.replays.Reconcile(ctx, req.ID, id, approver1,
		replay.ReconcileInput{Choice: replaypolicy.Republish, Note: "not in the index"}, quarantine.RequestMeta{}))
	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusRunning, r.Status)

	running := ofAction(b.requestRows(t, req.ID), actionRunning)
	require.Len(t, running, 1, "the move back to running is audited")
	row := running[0]
	assert.Equal(t, approver1.Subject, row.Subject)
	assert.Equal(t, approver1.Email, row.Email, "the person who republished moved it")
	assert.Equal(t, "acme", row.Tenant)
	assert.Equal(t, map[string]any{"status": string(replay.StatusDoneWithProblems)}, row.Before)
	assert.Equal(t, string(replay.StatusRunning), row.After["status"])
	assert.EqualValues(t, id, row.After["dead_letter"], "it names the item published again: %v", row.After)
	assert.Contains(t, row.Reason, "not in the index", "the person's note is why")
	b.requireChainVerifies(t)
}
