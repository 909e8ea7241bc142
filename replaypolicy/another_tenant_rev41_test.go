package replaypolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRev41ReplayByAnotherTenantIsNoReplayOfThisOne: an item whose message
// id on its subject another tenant's request replayed (subjects both may
// replay to) is blocked for a person in every class that asks the ledger,
// at draft and at execution, never skipped as done: another tenant's dead
// letter may carry any message id (a forged one naming this tenant's
// message), and its replay neither shows this one's effect happened nor
// may make this tenant's dead letter "replayed". A rebuildable item goes,
// as for any earlier replay.
func TestRev41ReplayByAnotherTenantIsNoReplayOfThisOne(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	for _, tc := range []struct {
		class    Class
		itemType string
		outcome  Outcome
	}{
		{Rebuildable, "search.index_update", Go},
		{Dedupe, "analytics.event", Block},
		{SameOperation, "email.send", Block},
		{Manual, "orders.refund", Block},
	} {
		item := testItem(tc.itemType)
		item.AlreadyReplayed, item.ReplayedBy = true, AnotherTenant
		v := JudgeItem(tbl, item, AtDraft)
		assert.Equal(t, tc.outcome, v.Outcome, "%s at draft: %s", tc.class, v.Reason)
		if tc.outcome == Block {
			assert.Contains(t, v.Reason, "by a replay request of another tenant", tc.class)
			assert.Contains(t, v.Reason, "nor taken as replayed", tc.class)
		}
		for _, applied := range []bool{false, true} {
			j := JudgeJob(Job{Class: tc.class, Ledger: &Ledger{Replayed: true, ReplayedBy: AnotherTenant, AppliedOnly: applied}})
			assert.Equal(t, tc.outcome, j.Outcome, "%s at execution (applied only %v): %s", tc.class, applied, j.Reason)
		}
	}
	unsettled := JudgeJob(Job{Class: Dedupe, Ledger: &Ledger{Unsettled: AnotherTenant}})
	assert.Equal(t, Block, unsettled.Outcome)
	assert.Contains(t, unsettled.Reason, "an approver of that tenant settles it there", "this tenant cannot settle another's request")
	same := testItem("analytics.event")
	same.AlreadyReplayed, same.ReplayedBy = true, 17
	assert.Equal(t, Done, JudgeItem(tbl, same, AtDraft).Outcome, "this tenant's own replay is skipped as before")
	assert.Equal(t, Done, JudgeJob(Job{Class: Dedupe, Ledger: &Ledger{Replayed: true, ReplayedBy: 17}}).Outcome)
}
