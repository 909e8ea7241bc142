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

// TestRevGov12RenewedApprovalForgetsTheAddressItWasGivenUnder: separation
// of duties compares each approver "as the request recorded them and as
// the directory has them now" (invariant 14 over time). A lapsed approval
// is renewed in place (insertApproval's ON CONFLICT ... DO UPDATE SET
// approver_email = EXCLUDED.approver_email), so the address the request
// recorded is overwritten by the one the approver's session has now.
//
// One person, two identities: approver1 (a1@example.com) and a GitHub
// identity with the same address. approver1 approves a manual request
// (two approvers) as a1@example.com; the approval expires (4 h); the
// provider renames approver1 to a1-new@example.com. The GitHub identity
// approves (the expired approval no longer stands, so nothing stops it:
// it stands for the person now). approver1 approves again: the GitHub
// approval is compared with approver1 as signed in now (a1-new@) only,
// and the renewal rewrites the row's a1@example.com to a1-new@, so the
// request's records no longer link the two. The request is approved by
// "two distinct approvers" who are one person.
func TestRevGov12RenewedApprovalForgetsTheAddressItWasGivenUnder(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)

	const msgID = "refund-revgov12-renew"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-12"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	require.Equal(t, 2, req.ApprovalsNeeded, "orders.refund is manual: two approvers")
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)

	// Time as it went: submitted 6 h ago, approver1 signed off 5 h ago
	// (past the manual class's 4 h approval_expiry).
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_requests SET created_at = created_at - interval '6 hours',
            submitted_at = submitted_at - interval '6 hours' WHERE id = $1`, req.ID)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_approvals SET approved_at = approved_at - interval '5 hours' WHERE request_id = $1`, req.ID)
	require.NoError(t, err)

	// The provider renames approver1's address; the person's second
	// identity keeps the old one.
	a1Now := approver1
	a1Now.Email, a1Now.EmailVerified = "a1-new@example.com", true
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: a1Now, Groups: []string{"quarantine:acme:approver"}}))
	second := quarantine.Actor{Issuer: "https://github.example", Subject: "a1-gh", Email: approver1.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: second, Groups: []string{"quarantine:acme:approver"}}))
	require.True(t, replaypolicy.SamePerson(approver1, second), "precondition: as the request recorded approver1, one person with the second identity")

	d, err := b.replays.Approve(ctx, req.ID, second, in, quarantine.RequestMeta{})
	require.NoError(t, err, "the second identity stands for the person now that the first approval expired")
	require.Equal(t, 1, d.ApprovalsHave, "precondition: one approval counts (%s)", d.Reason)

	d, err = b.replays.Approve(ctx, req.ID, a1Now, in, quarantine.RequestMeta{})
	var approvedAs []string
	rows, qerr := b.db.Pool.Query(ctx, `SELECT approver_subject || ' as ' || approver_email FROM replay_approvals WHERE request_id = $1 ORDER BY approver_subject`, req.ID)
	require.NoError(t, qerr)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		approvedAs = append(approvedAs, s)
	}
	require.NoError(t, rows.Err())
	assert.False(t, err == nil && d.Ready,
		"one person (approver1, recorded on this request as %s, and %s|%s with that address) gave both approvals of a two-approver request: "+
			"ready=%v, %d of %d; approvals now recorded: %v", approver1.Email, second.Issuer, second.Subject, d.Ready, d.ApprovalsHave, d.ApprovalsNeeded, approvedAs)
	got, gerr := b.replays.Request(ctx, req.ID)
	require.NoError(t, gerr)
	assert.Equal(t, replay.StatusPendingApproval, got.Status, "the request waits for a second person")
	if got.Status != replay.StatusApproved {
		return
	}
	// The workers take it from there: the destructive item is published on
	// one person's word.
	run(t, b.worker(t, replay.WorkerConfig{}))
	r := b.waitFinished(t, req.ID)
	assert.Zero(t, b.onSubject(t, "app.acme.orders.refund"),
		"a manual item was published on the two approvals of one person (request %s: %s; jobs: %s)", r.Status, r.StatusReason, b.jobsText(t, req.ID))
}
