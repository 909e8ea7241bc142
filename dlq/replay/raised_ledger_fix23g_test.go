package replay_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRaisedSameOperationItemIsLedgeredUnderItsOperation: an email.send
// (same_operation) dead letter whose error class is policy is replayed as
// revalidate, with same_operation's rules kept (review 23g): the ledger
// row of its replay says it was replayed under them (operation_key), and
// a later email.send dead letter of the same operation, under another
// message id, is left out at draft as already replayed by that request,
// not sent as a second email. ("Already replayed" asks every ledger row
// of the operation id, whatever its flags: the second half held before
// the fix too; the flag is what the fix changes.)
func TestRaisedSameOperationItemIsLedgeredUnderItsOperation(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	const subject = "app.acme.email.send"
	letter := func(msgID, errorClass string) int64 {
		return testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "email.send", MsgID: msgID, OperationID: "op-email-raised",
			Principal: "user:alice", Class: errorClass, Payload: []byte(`{"to":"a@example.com"}`)})
	}
	first := letter("email-raised-1", "policy")
	req := approved(t, b, b.request(t, []int64{first}, replay.SubmitInput{Reason: "resend the notice"}))
	require.Equal(t, replaypolicy.Revalidate, req.Class, "error class policy: at least revalidate")
	reval := newResponder(t, b, "revalidate.acme", func(replay.RevalidateQuery) (bool, string, bool) { return true, "", true })
	run(t, b.worker(t, replay.WorkerConfig{}, reval))
	b.waitStatus(t, req.ID, replay.StatusDone)
	require.Equal(t, 1, b.onSubject(t, subject))
	assert.Equal(t, map[int64][2]bool{first: {false, true}}, ledgerRows(t, b, req.ID),
		"replayed under same_operation's rules too: its row is keyed by its operation id")

	again := letter("email-raised-2", "transient")
	check, reason := draftVerdict(t, b, again)
	assert.Equal(t, replaypolicy.CheckLedger, check)
	assert.Contains(t, reason, fmt.Sprintf("already replayed successfully by replay request %d", req.ID))
	assert.Equal(t, 1, b.onSubject(t, subject))
}
