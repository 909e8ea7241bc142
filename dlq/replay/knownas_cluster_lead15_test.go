package replay_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestLead15WalkFollowsAClusterOfSixtyAccounts: sixty accounts seen
// verified with one shared address, one of them with the requester's too,
// are followed to the end (the walk reads each again at every depth, some
// 480 identity-steps, past the 400 it used to stop at, which made every
// request they touch unapprovable): the farthest of them is the
// requester's and may not approve (refused with why); approver1, linked to none, may.
func TestLead15WalkFollowsAClusterOfSixtyAccounts(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	const msgID = "lead15-cluster"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":1}`)
	requester := rememberAs(t, b, quarantine.Actor{Issuer: "https://idp.example", Subject: msgID}, true,
		[]string{"quarantine:acme:oncall"}, msgID+"@example.com")
	req := testfactory.Request(t, b.replays, requester, []int64{id}, replay.SubmitInput{Reason: "the refund failed"})
	rememberAs(t, b, quarantine.Actor{Issuer: "https://cluster.example", Subject: "c0"}, true, nil,
		msgID+"@example.com", "shared-"+msgID+"@example.com")
	var far quarantine.Actor
	for i := 1; i < 60; i++ {
		far = rememberAs(t, b, quarantine.Actor{Issuer: "https://cluster.example", Subject: fmt.Sprint("c", i)}, true, fixGov14Approvers,
			"shared-"+msgID+"@example.com", fmt.Sprint("c", i, "-", msgID, "@example.com"))
	}

	_, err := approveAs(t, b, req.ID, msgID, far)
	// Refused, with why (invalid, not forbidden: it is the shared address
	// its own account was seen with that links it, KnowsAsRequester).
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "the cluster's farthest account is the requester's: %v", err)
	_, err = approveAs(t, b, req.ID, msgID, approver1)
	assert.NoError(t, err, "approver1 is linked to none of them, and the walk went to the end")
}
