package replay_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevReplay19EditOfOneItemBlocksUneditedEmailInSameRequest: with the
// shipped policy, an email.send (same_operation) aimed at an accounts
// subject is revalidate (subject rule), and so is an accounts item: one
// draft holds both. The requester edits the accounts item's payload (the
// rules allow it: it is not same_operation) and submits. Approval judges
// every item with the request's "edited" mark (DecideItems:
// item.PayloadEdited || req.PayloadEdited), so the email, whose payload
// nobody touched, is refused as edited, and the request with it. Submit
// judges the items one by one (JudgeItem, then JudgeRequest) and lets it
// through; Approve and the request page judge it by DecideItems: the
// request waits for an approval nobody can give.
func TestRevReplay19EditOfOneItemBlocksUneditedEmailInSameRequest(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := t.Context()
	ids := testfactory.DeadLetters(t, b.db.Pool,
		testfactory.Letter{ItemType: "email.send", MsgID: "mail-1", OperationID: "op-mail-1", Principal: "user:dana",
			Subject: "app.acme.accounts.notify", Payload: []byte(`{"to":"dana@example.com"}`)},
		testfactory.Letter{ItemType: "accounts.permission_grant", MsgID: "grant-1", OperationID: "op-grant-1", Principal: "user:dana",
			Subject: "app.acme.accounts.permission_grant", Payload: []byte(`{"grant":"read"}`)})
	mail, grant := ids[0], ids[1]

	batch, drafts := b.draft(t, oncall, mail, grant)
	require.Len(t, drafts, 1, "both are revalidate: one draft")
	require.Equal(t, replaypolicy.Revalidate, drafts[0].Class)
	items := b.itemsOf(t, drafts)
	require.Empty(t, items[mail].SkipReason, "the email goes at draft")
	require.Empty(t, items[grant].SkipReason, "the grant goes at draft")

	require.NoError(t, b.replays.EditPayload(ctx, drafts[0].ID, grant, oncall,
		replay.PayloadEdit{Payload: []byte(`{"grant":"write"}`), Reason: "grant as the ticket says"}, quarantine.RequestMeta{}),
		"the accounts item may be edited")

	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "re-grant after the outage"}, quarantine.RequestMeta{})
	require.NoError(t, err, "the email was never edited; only the grant was")
	require.Len(t, reqs, 1)
	require.Equal(t, replay.StatusPendingApproval, reqs[0].Status, "submitted: it waits for an approver who sees the edit")

	// The approver reviews it and approves: Approve judges the request by
	// DecideItems, which marks the email edited too and refuses it.
	req, err := b.replays.Request(ctx, reqs[0].ID)
	require.NoError(t, err)
	_, err = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err, "one approver who saw the diff approves a revalidate request whose only edit is the grant's")
}
