package replaypolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFixLeft11OversizeSaysWhatHelps: an item over the size limit is told
// what can bring it under in its case, not "edit the payload down" where
// no edit helps.
func TestFixLeft11OversizeSaysWhatHelps(t *testing.T) {
	t.Parallel()
	small := Send{Size: 5000, PayloadSize: 4500, MaxPayload: 4096} // headers 500 bytes: an edit can help
	headersOnly := Send{Size: 5000, PayloadSize: 200, MaxPayload: 4096}
	tbl := mustParse(t, testPolicy)
	judge := func(itemType string, at Step, change func(*Item)) Verdict {
		it := testItem(itemType)
		change(&it)
		return JudgeItem(tbl, it, at)
	}
	for _, tc := range []struct {
		name        string
		send        Send
		at          Step
		class       string // item type's rule: search.x is rebuildable, email.x same_operation
		has, hasNot []string
	}{
		{"DraftEditable", small, AtDraft, "search.x", []string{"max_payload of 4096 bytes", "edit the payload down"}, []string{"lower now"}},
		{"HeadersAlone", headersOnly, AtDraft, "search.x", []string{"headers alone come to 4800 bytes", "no edit of the payload", "REPLAY_MAX_PAYLOAD"}, []string{"edit the payload down"}},
		{"HeadersAloneAtExecution", headersOnly, AtExecution, "search.x", []string{"headers alone"}, []string{"edit the payload down"}},
		{"LoweredAtExecution", small, AtExecution, "search.x", []string{"within the limit when it was requested", "cannot be edited", "request it again"}, []string{"edit the payload down ("}},
		{"LoweredSameOperation", small, AtExecution, "email.x", []string{"within the limit when it was requested", "original payload", "REPLAY_MAX_PAYLOAD"}, []string{"edit"}},
		{"DraftSameOperation", small, AtDraft, "email.x", []string{"original payload", "higher limit"}, []string{"edit the payload down"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := judge(tc.class, tc.at, func(i *Item) {
				i.Send = tc.send
				if tc.at == AtExecution {
					i.Status, i.HeldBy, i.Request = "replaying", 9, 9
				}
			})
			assert.Equal(t, Block, v.Outcome, v.Reason)
			assert.Equal(t, CheckUnsendable, v.Check, v.Reason)
			for _, s := range tc.has {
				assert.Contains(t, v.Reason, s)
			}
			for _, s := range tc.hasNot {
				assert.NotContains(t, v.Reason, s)
			}
		})
	}
	// Needs reconciliation (an earlier publish may have landed): the
	// advice of the lowered limit, then what the person settles.
	v := judge("search.x", AtExecution, func(i *Item) { i.Send = small; i.Status, i.HeldBy, i.Request = "replaying", 9, 9 })
	r := JudgeUnsent(v, Unsent{State: "unknown", Attempted: true})
	assert.Equal(t, Reconcile, r.Outcome)
	assert.Contains(t, r.Reason, "within the limit when it was requested")
	assert.NotContains(t, r.Reason, "edit the payload down (")
}
