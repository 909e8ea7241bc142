package replay_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// renamedWithSecondIdentity makes approver1 one person with two
// identities, as the review's case has them: the provider renames
// approver1 to a1-new@example.com (a1Now), and the person's GitHub
// identity (second) holds approver1's first address.
func renamedWithSecondIdentity(t *testing.T, b *replayBundle) (a1Now, second quarantine.Actor) {
	t.Helper()
	dir := authz.NewDirectory(b.db.Pool)
	a1Now = approver1
	a1Now.Email, a1Now.EmailVerified = "a1-new@example.com", true
	require.NoError(t, dir.Remember(t.Context(), authz.User{Actor: a1Now, Groups: []string{"quarantine:acme:approver"}}))
	second = quarantine.Actor{Issuer: "https://github.example", Subject: "a1-gh", Email: approver1.Email, EmailVerified: true}
	require.NoError(t, dir.Remember(t.Context(), authz.User{Actor: second, Groups: []string{"quarantine:acme:approver"}}))
	return a1Now, second
}

// TestFixGov12EditKeepsTheAddressesApprovedUnder: an edit of a payload
// (and its undo) removes the request's approvals, and with them, before
// migration 0055, the only record that approver1 approved it as
// a1@example.com. approver1 approves a manual request as a1@example.com;
// the requester edits the payload (and, in one case, approver1 approves the
// edited one and the requester undoes the edit); the provider renames
// approver1 to a1-new@example.com; the person's second identity (which
// holds a1@example.com) approves; approver1 approves again: one person, so
// refused, and the request waits for a second person.
func TestFixGov12EditKeepsTheAddressesApprovedUnder(t *testing.T) {
	t.Parallel()
	for _, undo := range []bool{false, true} {
		t.Run(map[bool]string{false: "Edit", true: "EditThenUndo"}[undo], func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := context.Background()
			msgID := "refund-fixgov12-edit-" + strconv.FormatBool(undo)
			id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-12"}`)
			req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
			require.Equal(t, 2, req.ApprovalsNeeded, "orders.refund is manual: two approvers")
			approve := func(who quarantine.Actor) (replaypolicy.Decision, error) {
				cur, err := b.replays.Request(ctx, req.ID)
				require.NoError(t, err)
				return b.replays.Approve(ctx, req.ID, who, replay.ApproveInput{IntentHex: cur.IntentHex(), Confirmation: "REPLAY " + msgID},
					quarantine.RequestMeta{})
			}
			_, err := approve(approver1)
			require.NoError(t, err)
			require.NoError(t, b.replays.EditPayload(ctx, req.ID, id, oncall,
				replay.PayloadEdit{Payload: []byte(`{"refund":"order-12","note":"again"}`), Reason: "add a note"}, quarantine.RequestMeta{}))
			if undo {
				_, err = approve(approver1)
				require.NoError(t, err, "approver1 approves the edited payload")
				_, err = b.replays.ChangePayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Undo: true, Reason: "back"}, quarantine.RequestMeta{})
				require.NoError(t, err)
			}
			as, err := b.replays.Approvals(ctx, req.ID)
			require.NoError(t, err)
			require.Empty(t, as, "precondition: the edit removed the approvals")

			a1Now, second := renamedWithSecondIdentity(t, b)

			d, err := approve(second)
			require.NoError(t, err, "nothing of the person's stands on the edited request")
			require.Equal(t, 1, d.ApprovalsHave, "%s", d.Reason)
			_, err = approve(a1Now)
			assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "approver1 approved this request as %s, which %s holds: %v",
				approver1.Email, second.Subject, err)
			got, err := b.replays.Request(ctx, req.ID)
			require.NoError(t, err)
			assert.Equal(t, replay.StatusPendingApproval, got.Status, "the request waits for a second person")
		})
	}
}

// TestFixGov12RenewedFirstThenSecondIdentity: the other order of the
// review's case. approver1's approval lapses and the provider renames
// them; approver1 renews it under the new address first; then the
// person's second identity, holding the address approver1 first approved
// under, is refused: the renewed approval stands for both addresses.
func TestFixGov12RenewedFirstThenSecondIdentity(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID = "refund-fixgov12-renew-first"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-13"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_requests SET created_at = created_at - interval '6 hours',
            submitted_at = submitted_at - interval '6 hours' WHERE id = $1`, req.ID)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_approvals SET approved_at = approved_at - interval '5 hours' WHERE request_id = $1`, req.ID)
	require.NoError(t, err)

	a1Now, second := renamedWithSecondIdentity(t, b)

	d, err := b.replays.Approve(ctx, req.ID, a1Now, in, quarantine.RequestMeta{})
	require.NoError(t, err, "the lapsed approval is renewed")
	require.Equal(t, 1, d.ApprovalsHave, "%s", d.Reason)
	var addrs []string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT array_agg(email ORDER BY email) FROM identity_addresses
        WHERE issuer = $1 AND subject = $2`, approver1.Issuer, approver1.Subject).Scan(&addrs))
	assert.Equal(t, []string{"a1-new@example.com", "a1@example.com"}, addrs, "both addresses approver1 approved under are kept")

	_, err = b.replays.Approve(ctx, req.ID, second, in, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, got.Status)
	as, err := b.replays.Approvals(ctx, req.ID)
	require.NoError(t, err)
	c := replay.CountOf(b.policy.Load(), got, as, b.clock())
	assert.Equal(t, 1, c.Have, "one person's approval counts once (%v)", c.Ignored)
}

// TestFixGov12SettlerAsTheDirectoryHasThemNow: a settle of an item is
// refused to an actor whose identity, as the directory has it now, holds
// the requester's address, though their session began under another
// (finding 3): forbidden, before the item is looked at, and audited as
// denied; the page does not offer it.
func TestFixGov12SettlerAsTheDirectoryHasThemNow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dir := authz.NewDirectory(b.db.Pool)
	const msgID = "refund-fixgov12-settle"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-14"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})

	// approver2 signed in as a2@example.com; the provider since gave the
	// identity the requester's address (a refresh of another session).
	renamed := approver2
	renamed.Email = oncall.Email
	require.NoError(t, dir.Remember(ctx, authz.User{Actor: renamed, Groups: []string{"quarantine:acme:approver"}}))
	now, err := b.replays.IdentityNow(ctx, approver2)
	require.NoError(t, err)
	require.Equal(t, oncall.Email, now.Email)
	got, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replaypolicy.Block, got.MayReconcile(approver2, now).Outcome, "the page offers no settle")
	assert.Equal(t, replaypolicy.Go, got.MayReconcile(approver2, quarantine.Actor{}).Outcome, "precondition: as signed in, another person")

	err = b.replays.Reconcile(ctx, req.ID, id, approver2, replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "checked"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "%v", err)
	var denied int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'replay.item.reconciled'
        AND outcome = 'denied' AND actor_subject = $1 AND object_id = $2`, approver2.Subject, strconv.FormatInt(req.ID, 10)).Scan(&denied))
	assert.Equal(t, 1, denied, "the refusal is audited")

	err = b.replays.Reconcile(ctx, req.ID, id, approver1, replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "checked"}, quarantine.RequestMeta{})
	assert.NotEqual(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "another person is not refused as the requester: %v", err)
}
