package replay_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevPolicy23SameOperationPayloadEditedWhenErrorClassRaises: under the
// shipped policy, email.send is same_operation: DESIGN.md, "Edited payloads
// ... are never allowed for same_operation" (the operation is repeated
// exactly). An email.send dead letter whose producer said Dlq-Error-Class:
// policy (min_class revalidate) is classed revalidate, and
// replaypolicy.Classify leaves same_operation out of its Union (see
// replaypolicy TestRevPolicy23RaisedClassDropsItemTypeClassRules): the
// console lets the requester edit its payload, keeps the edit, and submits
// the request for approval, to be published under the original message
// and operation ids with another body.
func TestRevPolicy23SameOperationPayloadEditedWhenErrorClassRaises(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := t.Context()

	// Control: the same dead letter with a transient error class is
	// same_operation, and its payload edit is refused.
	control := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "email.send", MsgID: "email-transient-1",
		OperationID: "op-email-transient-1", Principal: "user:alice", Payload: []byte(`{"to":"a@example.com","amount":10}`)})
	_, controls := b.draft(t, oncall, control)
	require.Len(t, controls, 1)
	require.Equal(t, replaypolicy.SameOperation, controls[0].Class)
	require.Error(t, b.replays.EditPayload(ctx, controls[0].ID, control, oncall,
		replay.PayloadEdit{Payload: []byte(`{"to":"a@example.com","amount":1000}`), Reason: "other amount"}, quarantine.RequestMeta{}),
		"a same_operation payload is never edited")

	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "email.send", MsgID: "email-policy-1",
		OperationID: "op-email-policy-1", Principal: "user:alice", Class: "policy", Payload: []byte(`{"to":"a@example.com","amount":10}`)})
	batch, drafts := b.draft(t, oncall, id)
	require.Len(t, drafts, 1)
	require.Equal(t, replaypolicy.Revalidate, drafts[0].Class, "error class policy: at least revalidate")

	err := b.replays.EditPayload(ctx, drafts[0].ID, id, oncall,
		replay.PayloadEdit{Payload: []byte(`{"to":"a@example.com","amount":1000}`), Reason: "other amount"}, quarantine.RequestMeta{})
	assert.Errorf(t, err, "the payload of a same_operation (email.send) dead letter was edited and the edit kept")
	if err != nil {
		return
	}
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "resend"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	assert.Failf(t, "an edited same_operation item is submitted", "request %d is %s with an edited payload (payload_edited %t)",
		reqs[0].ID, reqs[0].Status, reqs[0].PayloadEdited)
}
