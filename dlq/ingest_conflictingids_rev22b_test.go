package dlq_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevIngest22ConflictingOperationIDsReplayUnderTheFirst (review 22b):
// the sibling round 21 left of its Dlq-Error-Class fix. A dead letter that
// carries Dlq-Operation-Id twice with two different values (a framework's
// default added before the service's own, or the contract's spelling
// beside a lower-case copy a gateway added) is read by its first value (or
// the contract's spelling), flagged duplicate:operation_id, a flag no
// replay rule weighs. For a same_operation item type the operation id is
// the one thing that makes a replay safe: downstream dedupes the effect on
// it. Which of the two the consumer's effect ran under is not known, and
// the replay goes out under whichever came first: if that is the wrong
// one, the email is sent a second time. Round 21's own reasoning ("values
// that say different things are no more readable than one misspelt") holds
// for the idempotency key even more than for the class: such a dead letter
// must not be replayed as same_operation under a guessed operation id.
func TestRevIngest22ConflictingOperationIDsReplayUnderTheFirst(t *testing.T) {
	t.Parallel()
	table, err := replaypolicy.Load("../dev/policy.toml")
	require.NoError(t, err)
	for name, h := range map[string]map[string][]string{
		"SentTwice":        {dlq.HeaderOperationID: {"op-framework-default", "op-email-7"}},
		"SentInTwoCases":   {dlq.HeaderOperationID: {"op-framework-default"}, "dlq-operation-id": {"op-email-7"}},
		"TwoOtherSpelling": {"DLQ-OPERATION-ID": {"op-framework-default"}, "dlq-operation-id": {"op-email-7"}},
	} {
		t.Run(name, func(t *testing.T) {
			h[dlq.HeaderOriginalSubject] = []string{"app.acme.email.send"}
			h[dlq.HeaderOriginalMsgID] = []string{"msg-1"}
			h[dlq.HeaderErrorClass] = []string{"transient"}
			rec := dlq.ParseDLQ("dlq", dlq.Received{
				Subject: "dlq.acme.email.send",
				Header:  h,
				Data:    []byte(`{"to":"a@acme.example"}`),
				Stream:  "DLQ", Seq: 7, Time: time.Now().Add(-time.Hour),
			})
			require.Contains(t, rec.Flags, "duplicate:operation_id", "the conflict is seen")
			item := replaypolicy.Item{
				ItemType: rec.ItemType, OriginalSubject: rec.OriginalSubject, MsgID: rec.MsgID, OperationID: rec.OperationID,
				ErrorClass: string(dlq.UnreadableErrorClass(rec.ErrorClass, rec.Flags)), DeadLetteredAt: rec.DeadLetteredAt,
				Status: "quarantined", PayloadSHA256: "aa", OriginalPayloadSHA256: "aa",
				// The fix keeps storing the first value (nothing is lost) and
				// flags conflicting:operation_id; the item facts read that
				// flag into Item.Conflicting (dlq.ConflictsOf, as the
				// console's facts do), so the test states it as they do.
				Conflicting: conflicting(rec),
			}
			require.Contains(t, rec.Flags, "conflicting:operation_id")
			v := replaypolicy.JudgeItem(table, item, replaypolicy.AtDraft)
			assert.Equal(t, replaypolicy.CheckConflictingHeader, v.Check, v.Reason)
			assert.Contains(t, v.Reason, `Dlq-Operation-Id "op-framework-default" and "op-email-7", which disagree`)
			assert.Equal(t, replaypolicy.Block, v.Outcome,
				"a same_operation dead letter that named two operation ids (op-framework-default and op-email-7) is judged %v (%s), "+
					"to be replayed under operation id %q, which may not be the one its effect ran under", v.Outcome, v.Reason, rec.OperationID)
		})
	}
}

// TestRevIngest22ConflictingPrincipalsRevalidateTheFirst (review 22b): the
// same for Dlq-Principal, which a revalidate replay re-checks before it
// sends: two principals that disagree (a gateway's service account added
// before the person who asked, or a lower-case copy) and the first is the
// one whose authority is re-checked. If that is the service account, the
// replay passes a check the person would fail.
func TestRevIngest22ConflictingPrincipalsRevalidateTheFirst(t *testing.T) {
	t.Parallel()
	table, err := replaypolicy.Load("../dev/policy.toml")
	require.NoError(t, err)
	for name, h := range map[string]map[string][]string{
		"SentTwice":      {dlq.HeaderPrincipal: {"svc-gateway", "user:mallory"}},
		"SentInTwoCases": {dlq.HeaderPrincipal: {"svc-gateway"}, "dlq-principal": {"user:mallory"}},
	} {
		t.Run(name, func(t *testing.T) {
			h[dlq.HeaderOriginalSubject] = []string{"app.acme.accounts.permission_grant"}
			h[dlq.HeaderOriginalMsgID] = []string{"msg-2"}
			h[dlq.HeaderErrorClass] = []string{"transient"}
			rec := dlq.ParseDLQ("dlq", dlq.Received{
				Subject: "dlq.acme.accounts.permission_grant",
				Header:  h,
				Data:    []byte(`{"grant":"admin"}`),
				Stream:  "DLQ", Seq: 8, Time: time.Now().Add(-time.Hour),
			})
			require.Contains(t, rec.Flags, "duplicate:principal", "the conflict is seen")
			item := replaypolicy.Item{
				ItemType: rec.ItemType, OriginalSubject: rec.OriginalSubject, MsgID: rec.MsgID, OperationID: rec.OperationID,
				Principal:  rec.Principal,
				ErrorClass: string(dlq.UnreadableErrorClass(rec.ErrorClass, rec.Flags)), DeadLetteredAt: rec.DeadLetteredAt,
				Status: "quarantined", PayloadSHA256: "aa", OriginalPayloadSHA256: "aa",
				Conflicting: conflicting(rec), // as above: the flag, read as the item facts read it
			}
			require.Contains(t, rec.Flags, "conflicting:principal")
			v := replaypolicy.JudgeItem(table, item, replaypolicy.AtDraft)
			assert.Equal(t, replaypolicy.CheckConflictingHeader, v.Check, v.Reason)
			assert.Contains(t, v.Reason, `Dlq-Principal "svc-gateway" and "user:mallory", which disagree`)
			assert.Equal(t, replaypolicy.Block, v.Outcome,
				"a revalidate dead letter that named two principals (svc-gateway and user:mallory) is judged %v (%s), "+
					"its authority to be re-checked as %q's", v.Outcome, v.Reason, rec.Principal)
		})
	}
}

// conflicting is Item.Conflicting of rec as the console's item facts read
// it: the conflicts its flags name, with the values its headers show.
func conflicting(rec dlq.Record) []replaypolicy.ConflictingHeader {
	var out []replaypolicy.ConflictingHeader
	for _, c := range dlq.ConflictsOf(rec.Flags, rec.Headers) {
		out = append(out, replaypolicy.ConflictingHeader{Header: c.Header, Values: c.Values, More: c.More})
	}
	return out
}
