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

// TestRevFix10aSecondApprovalBySamePersonNowIsAcceptedAndCounted: since
// 4fa844a the approvals a request counts are people as recorded and as the
// directory has them now (containsPerson, MayBeOne), and the request page
// says so (ActorCanApprove false for someone whose other identity's
// approval counts). Approve itself does not: it refuses only the same
// identity's row ("you already approved"), so the same person, with a
// second identity whose address the first one's directory entry now holds,
// is accepted, audited as replay.approve, and adds nothing ("1 of 2"
// before and after); and the navigation's count (Awaiting, ApprovedBy:
// SamePerson of the approver as recorded only) keeps telling them the
// request waits for their approval.
func TestRevFix10aSecondApprovalBySamePersonNowIsAcceptedAndCounted(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	const msgID = "refund-revfix10a"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-9"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	require.Equal(t, 2, req.ApprovalsNeeded, "orders.refund is manual: two approvers")
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)

	// approver1's identity now holds the address of their second identity.
	second := quarantine.Actor{Issuer: "https://github.example", Subject: "a1-gh", Email: "a1-second@example.com", EmailVerified: true}
	a1Now := approver1
	a1Now.Email, a1Now.EmailVerified = second.Email, true
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: a1Now, Groups: []string{"quarantine:acme:approver"}}))
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: second, Groups: []string{"quarantine:acme:approver"}}))
	require.True(t, replaypolicy.SamePerson(a1Now, second), "precondition: one person now")

	all := func(string, replaypolicy.Class) bool { return true }
	n, err := b.replays.Awaiting(ctx, mayScopes([]string{"acme"}, all), second, 10)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "the navigation counts as waiting for them a request their own other identity's approval already counts for")

	d, err := b.replays.Approve(ctx, req.ID, second, in, quarantine.RequestMeta{})
	assert.Error(t, err, "the same person (as the directory has them now) approved a second time and was told it worked (approvals %d of %d)",
		d.ApprovalsHave, d.ApprovalsNeeded)
	var audited int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'replay.approve' AND outcome = 'ok' AND actor_subject = $1`,
		second.Subject).Scan(&audited))
	assert.Equal(t, 0, audited, "an approval that counts for nothing is in the audit trail as an approval")
}
