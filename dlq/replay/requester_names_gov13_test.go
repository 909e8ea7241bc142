package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevGov13RequesterSubmittedUnderAnotherAddress: "a person is every
// name we know them by" (invariant 14 over time). Round 12 keeps every
// address an approver's identity approved a request under
// (replay_approval_addresses), but the requester is compared only as the
// draft recorded them (requester_email, written when the selection was
// frozen) and as the directory has them now. The address the requester's
// identity submitted the request under is in the audit log, and nowhere
// the rules read.
//
// One person, two identities: oncall drafts a refund as
// oncall@example.com; the provider renames the identity to
// oncall-b@example.com and oncall submits under it (only the requester's
// identity may submit: SameIdentity, whatever the address); the provider
// renames it again (oncall-c@example.com, which the directory has now).
// The person's second identity, at GitHub, holds oncall-b@example.com, the
// very address the request was submitted under, and approves the
// two-approver request as if it were someone else; approver1 completes it.
func TestRevGov13RequesterSubmittedUnderAnotherAddress(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	const msgID = "refund-revgov13-submit-as"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-13"}`)
	batch, drafts := b.draft(t, oncall, id)
	require.Len(t, drafts, 1)
	phrase, err := b.replays.ConfirmationFor(ctx, drafts[0].ID)
	require.NoError(t, err)

	// Renamed before the submit: the session that submits carries the new
	// address (a sign-in or a refresh wrote it to the directory too).
	asB := oncall
	asB.Email, asB.EmailVerified = "oncall-b@example.com", true
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: asB, Groups: []string{"quarantine:acme:oncall"}}))
	reqs, err := b.replays.Submit(ctx, batch, asB, replay.SubmitInput{Reason: "the refund failed on a timeout",
		Confirmations: map[int64]string{drafts[0].ID: phrase}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	req := reqs[0]
	require.Equal(t, 2, req.ApprovalsNeeded, "orders.refund is manual: two approvers")

	// Renamed again; the second identity holds the address of the submit.
	asC := oncall
	asC.Email, asC.EmailVerified = "oncall-c@example.com", true
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: asC, Groups: []string{"quarantine:acme:oncall"}}))
	second := quarantine.Actor{Issuer: "https://github.example", Subject: "oncall-gh", Email: asB.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: second, Groups: []string{"quarantine:acme:approver"}}))
	require.True(t, replaypolicy.SamePerson(asB, second), "precondition: the submitter, as it submitted, is one person with the second identity")

	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err = b.replays.Approve(ctx, req.ID, second, in, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err),
		"the requester's second identity, holding the address the request was submitted under (%s), approves its own request: err=%v", asB.Email, err)

	_, err = b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, got.Status,
		"a two-approver request is approved by its requester (submitted as %s, now %s|%s) and one other person", asB.Email, second.Issuer, second.Subject)
	if got.Status != replay.StatusApproved {
		return
	}
	// The worker judges the people again before it publishes, with the same
	// names: the manual item goes out on the word of one person besides its
	// requester.
	run(t, b.worker(t, replay.WorkerConfig{}))
	r := b.waitFinished(t, req.ID)
	assert.Zero(t, b.onSubject(t, "app.acme.orders.refund"),
		"a manual item was published with its requester as one of its two approvers (request %s: %s; jobs: %s)", r.Status, r.StatusReason, b.jobsText(t, req.ID))
}
