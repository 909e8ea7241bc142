package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestApprovalExpiryOfUnion replays an item classed by two classes: its
// item type is dedupe, whose approvals expire after 1 h, and its target
// subject same_operation (approvals expire after 24 h), the stricter class
// and so the request's. The submit stores both classes on the request; an
// approval given 2 hours ago still counts for same_operation alone, but the
// worker judges the approval's age by the union, as the submit judged the
// request: the job is blocked as expired, nothing is published.
func TestApprovalExpiryOfUnion(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	table, err := replaypolicy.Parse("union.toml", []byte(`
[[rule]]
item_type = "analytics.*"
class = "dedupe"
[[rule]]
subject = "app.*.ledger.>"
class = "same_operation"
[class.dedupe]
approval_expiry = "1h"
`))
	require.NoError(t, err)
	b.policy.Store(table)
	if k, _ := table.Knobs(replaypolicy.SameOperation); k.ApprovalExpiry <= 2*time.Hour {
		t.Fatalf("same_operation's own approval expiry is %s: the test needs more than 2 h", k.ApprovalExpiry)
	}

	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: "ev-1", OperationID: "op-ev-1",
		Subject: "app.acme.ledger.post", Payload: []byte("{}")})
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	assert.Equal(t, replaypolicy.SameOperation, req.Class)
	assert.ElementsMatch(t, []replaypolicy.Class{replaypolicy.SameOperation, replaypolicy.Dedupe}, req.Classes, "the union is stored with the request")
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready, "approved now, within both expiries")
	// Two hours pass (by the database's clock too: approvals are judged at
	// the later of the console's and the database's, so a console's clock
	// set back no longer makes an approval older).
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_approvals SET approved_at = approved_at - interval '2 hours' WHERE request_id = $1`, req.ID)
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_requests SET approved_at = approved_at - interval '2 hours' WHERE id = $1`, req.ID)
	require.NoError(t, err)

	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitFinished(t, req.ID)
	j := b.job(t, req.ID, id)
	assert.Equal(t, "blocked", j.State)
	assert.Contains(t, j.Result, "the approval expired (1h0m0s)")
	assert.Empty(t, streamMsgs(t, b.target), "nothing published")
}
