package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// approveAs approves request id as who, with the intent it has now.
func approveAs(t *testing.T, b *replayBundle, id int64, msgID string, who quarantine.Actor) (bool, error) {
	t.Helper()
	got, err := b.replays.Request(context.Background(), id)
	require.NoError(t, err)
	d, err := b.replays.Approve(context.Background(), id, who, replay.ApproveInput{IntentHex: got.IntentHex(), Confirmation: "REPLAY " + msgID},
		quarantine.RequestMeta{})
	return d.Ready, err
}

// rememberAs remembers one identity seen with each of emails in turn
// (verified as said), the last one its address now, with groups.
func rememberAs(t *testing.T, b *replayBundle, a quarantine.Actor, verified bool, groups []string, emails ...string) quarantine.Actor {
	t.Helper()
	for _, e := range emails {
		a.Email, a.EmailVerified = e, verified
		require.NoError(t, authz.NewDirectory(b.db.Pool).Remember(context.Background(), authz.User{Actor: a, Groups: groups}))
	}
	return a
}

var fixGov14Approvers = []string{"quarantine:acme:approver"}

// TestFixGov14ClaimedAddressesLinkNoStrangers: an account outside the
// request that merely claimed (unverified) approver1's address and then
// approver2's does not make them one person: anyone able to sign in at a
// provider that does not verify could otherwise take from any two people
// the right to approve each other's requests. The same account, its
// provider vouching for both addresses, does link them.
func TestFixGov14ClaimedAddressesLinkNoStrangers(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	for _, verified := range []bool{false, true} {
		t.Run(fmt.Sprint("verified=", verified), func(t *testing.T) {
			msgID := fmt.Sprint("fixgov14-claimed-", verified)
			id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":1}`)
			req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
			require.Equal(t, 2, req.ApprovalsNeeded)
			rememberAs(t, b, quarantine.Actor{Issuer: "https://lax-idp.example", Subject: fmt.Sprint("x-", verified)}, verified, nil,
				approver1.Email, approver2.Email)

			_, err := approveAs(t, b, req.ID, msgID, approver1)
			require.NoError(t, err)
			ready, err := approveAs(t, b, req.ID, msgID, approver2)
			if verified {
				assert.Error(t, err, "an account verified with both addresses links them: one person")
				return
			}
			require.NoError(t, err, "two people, whose addresses a stranger claimed, approve")
			assert.True(t, ready)
		})
	}
}

// TestFixGov14EditKeepsAnUnverifiedLinkingApprover: everyone who ever
// approved a request stays one of its people (replay_request_approvers),
// so their addresses, verified or not, link as before the edit that
// deleted their approval. a1Mid, seen (unverified) with a1@example.com
// and then a1-mid-u@example.com, approves; the requester edits the
// payload; approver1 approves; a1GH, verified with a1-mid-u@example.com,
// is approver1's, linked through a1Mid, and is refused. Through verified
// addresses alone (a1Mid's are not) nothing links them.
func TestFixGov14EditKeepsAnUnverifiedLinkingApprover(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID = "fixgov14-edit-unverified"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-14u"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	mid := rememberAs(t, b, quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "a1-mid-u"}, false, fixGov14Approvers,
		approver1.Email, "a1-mid-u@example.com")
	gh := rememberAs(t, b, quarantine.Actor{Issuer: "https://github.example", Subject: "a1-gh-u"}, true, fixGov14Approvers,
		"a1-mid-u@example.com")

	_, err := approveAs(t, b, req.ID, msgID, mid)
	require.NoError(t, err)
	require.NoError(t, b.replays.EditPayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Payload: []byte(`{"refund":"order-14u","amount":1}`),
		Reason: "the amount was missing"}, quarantine.RequestMeta{}))
	as, err := b.replays.Approvals(ctx, req.ID)
	require.NoError(t, err)
	require.Empty(t, as, "precondition: the edit deleted the approvals")

	_, err = approveAs(t, b, req.ID, msgID, approver1)
	require.NoError(t, err)
	_, err = approveAs(t, b, req.ID, msgID, gh)
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "approver1's second account approved: %v", err)
	after, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, after.Status)
}

// TestFixGov14WorkerBlocksOnALinkMadeAfterApproval: the worker's check
// before it publishes reads the request's people as the approval did,
// links through outside accounts among them. approver1 and a1GH approve a
// manual request as two people; then a1Mid signs in, seen (verified) with
// a1@example.com and then with a1GH's address: one person's two
// approvals, and the worker publishes nothing.
func TestFixGov14WorkerBlocksOnALinkMadeAfterApproval(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	const msgID = "fixgov14-worker-link"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"order-14w"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "the refund failed on a timeout"})
	gh := rememberAs(t, b, quarantine.Actor{Issuer: "https://github.example", Subject: "a1-gh-w"}, true, fixGov14Approvers,
		"a1-gh-w@example.com")
	_, err := approveAs(t, b, req.ID, msgID, approver1)
	require.NoError(t, err)
	ready, err := approveAs(t, b, req.ID, msgID, gh)
	require.NoError(t, err)
	require.True(t, ready, "precondition: two people approved it")

	rememberAs(t, b, quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "a1-mid-w"}, true, nil,
		approver1.Email, gh.Email)

	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond})
	j := b.rerun(t, w, req.ID, id)
	assert.Equal(t, "blocked", j.State, "one person's two approvals: %s", j.Result)
	assert.Zero(t, b.publishedAs(t, msgID))
}

// TestFixGov14FixMarkerOfAnAccountLinkedOutsideTheRequest: a fix marker
// recorded by the requester's GitHub account, linked to them only through
// their partner account (no person of the request), is the requester's
// own: a schema_invalid item it unlocks needs an approver who is not them
// (TestRevGov10RequesterOwnFixMarkerReplaysSchemaInvalidAlone).
func TestFixGov14FixMarkerOfAnAccountLinkedOutsideTheRequest(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	rememberAs(t, b, quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "oncall-mid-f"}, true, nil,
		oncall.Email, "oncall-mid-f@example.com")
	gh := rememberAs(t, b, quarantine.Actor{Issuer: "https://github.example", Subject: "oncall-gh-f"}, true, nil,
		"oncall-mid-f@example.com")
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "fixgov14-fix-linked",
		Class: "schema_invalid", Payload: []byte(`{"doc":1}`), At: time.Now().Add(-time.Hour)})
	_, err := b.store.RecordFix(ctx, id, dlq.FixInput{Scope: dlq.FixItemType, FixedAt: time.Now().Add(-time.Minute), Ref: "v9.9.9"},
		gh, quarantine.RequestMeta{}, time.Now())
	require.NoError(t, err)

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, 1, req.ItemCount, "the marker lets the item in")
	assert.Equal(t, replay.StatusPendingApproval, req.Status,
		"a schema_invalid item unlocked by the requester's own marker (another account of theirs) went without any approver")
}

// TestFixGov14WalkAtItsBoundRefuses: the walk from a request's people
// stops 8 identities away; what lies beyond is not known, and is never
// taken for "someone else": nobody may approve the request. A chain one
// shorter is followed to its end, and approver1, linked to nobody, may.
func TestFixGov14WalkAtItsBoundRefuses(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	for _, n := range []int{7, 8} {
		t.Run(fmt.Sprint(n, " away"), func(t *testing.T) {
			msgID := fmt.Sprint("fixgov14-bound-", n)
			id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":1}`)
			requester := rememberAs(t, b, quarantine.Actor{Issuer: "https://idp.example", Subject: msgID}, true,
				[]string{"quarantine:acme:oncall"}, msgID+"-0@example.com")
			req := testfactory.Request(t, b.replays, requester, []int64{id}, replay.SubmitInput{Reason: "the refund failed"})
			for i := 1; i <= n; i++ { // a chain: the i-th account holds the (i-1)-th address and its own
				rememberAs(t, b, quarantine.Actor{Issuer: "https://chain.example", Subject: fmt.Sprint(msgID, "-", i)}, true, nil,
					fmt.Sprint(msgID, "-", i-1, "@example.com"), fmt.Sprint(msgID, "-", i, "@example.com"))
			}
			_, err := approveAs(t, b, req.ID, msgID, approver1)
			if n < 8 {
				assert.NoError(t, err, "a chain within the bound, approver1 on none of it")
				return
			}
			assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "the walk reached its bound: %v", err)
		})
	}
}
