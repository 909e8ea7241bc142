package replay_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevPath29ApproveOfACancelledRequestIsAConflict: a manual request its
// requester cancelled while it waited for its two approvers is closed; an approver's approval
// afterwards, of the very intent they reviewed, is a conflict that changes
// nothing: the request stays cancelled, no approval is recorded, no job
// is written, its dead letter stays back in quarantine, and no approval
// is audited as done.
func TestRevPath29ApproveOfACancelledRequestIsAConflict(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	// A manual item: two approvers, so the first approval alone would
	// not move the request (approve's guarded statement is not reached).
	const msgID = "rev29c-approve-cancelled"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-29"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "timeout"})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	phrase := "REPLAY " + msgID
	require.NoError(t, b.replays.Cancel(ctx, req.ID, oncall, "refunded by hand instead", quarantine.RequestMeta{}))

	_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: phrase}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusCancelled, r.Status, "a closed request stays as it was closed")
	assert.Zero(t, b.approvalRows(t, req.ID), "no approval of a cancelled request is recorded")
	assert.Empty(t, b.jobStates(t, req.ID), "nothing to publish")
	status, held := b.deadLetterStatus(t, id, req.ID)
	assert.Equal(t, "quarantined", status, "its dead letter is back in quarantine")
	assert.False(t, held, "no item of the cancelled request holds it")
	assert.Zero(t, okAudits(t, b, "replay.approve", "replay_request", req.ID), "no approval is recorded as done")
}

// TestRevPath29SelectionOfAnotherRequesterIsNotFound: a draft selection
// is its requester's to review and submit; anyone else reading it (an
// approver, who may see the tenant's requests) is told there is no such
// selection and given none of it, with the denied rows for its tenant's
// auditors to see.
func TestRevPath29SelectionOfAnotherRequesterIsNotFound(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "email.send", "rev29c-selection", nats.Header{dlq.HeaderOperationID: {"op-rev29c-selection"}}, `{"to":"x"}`)
	batch, drafts := testfactory.Draft(t, b.replays, oncall, id)
	require.Len(t, drafts, 1)

	mine, err := b.replays.Selection(ctx, batch, oncall, 10)
	require.NoError(t, err, "the requester reviews their selection")
	require.Len(t, mine.Requests, 1)

	sel, err := b.replays.Selection(ctx, batch, approver1, 10)
	assert.Equal(t, quarantine.ENOTFOUND, quarantine.ErrorCode(err), "%v", err)
	var denied *replay.SelectionDeniedError
	require.True(t, errors.As(err, &denied), "the caller is given what to audit: %v", err)
	rows := denied.DeniedEvents(audit.Event{Action: "replay.selection.read", Outcome: audit.OutcomeDenied})
	require.NotEmpty(t, rows, "a denied row for the selection's tenant")
	for _, e := range rows {
		assert.Equal(t, drafts[0].Tenant, e.Tenant, "each row is the selection's tenant's")
	}
	assert.Empty(t, sel.Requests, "nothing of the selection is given")
}
