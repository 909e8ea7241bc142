package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestWorkerFailuresBlockTheJobAtTheLimit: a job the worker failed on is
// claimed again until the failures reach MaxWorkerFailures; then it is
// blocked, the count and the last failure in its reason, or, when a
// publish of it may have landed, it needs a person who checks the target
// (JudgeUnsent): a failure never says "not sent" of a publish that may
// have landed.
func TestWorkerFailuresBlockTheJobAtTheLimit(t *testing.T) {
	t.Parallel()
	for n := 1; n < MaxWorkerFailures; n++ {
		assert.Equal(t, Go, JudgeWorkerFailures(n, "boom").Outcome, "failure %d of %d", n, MaxWorkerFailures)
	}
	v := JudgeWorkerFailures(MaxWorkerFailures, "runtime error: index out of range [3] with length 3")
	assert.Equal(t, Block, v.Outcome)
	assert.Equal(t, CheckWorkerFailed, v.Check)
	assert.Equal(t, "the worker failed on this item 3 times: runtime error: index out of range [3] with length 3", v.Reason)
	assert.Equal(t, Block, JudgeWorkerFailures(MaxWorkerFailures+1, "boom").Outcome, "past the limit (a person had it published again)")

	landed := JudgeUnsent(v, Unsent{State: "claimed", Attempted: true})
	assert.Equal(t, Reconcile, landed.Outcome)
	assert.Equal(t, CheckMaybePublished, landed.Check)
	assert.Contains(t, landed.Reason, "the worker failed on this item 3 times")
	assert.Contains(t, landed.Reason, "may have landed")
	assert.Equal(t, Reconcile, JudgeUnsent(v, Unsent{State: "unknown"}).Outcome, "a retry after a lost PubAck")
	assert.Equal(t, Block, JudgeUnsent(v, Unsent{State: "pending"}).Outcome, "nothing of it was ever sent")
}

// TestApprovalLapseIsWhatJudgeRunBlocksAfter: the time a worker compares
// with its clock right before a publish is the one JudgeRun judges at a
// claim: an approval of a request not started lapses at its approval time
// plus its class's expiry (the strictest of its union); a started or
// running one never does.
func TestApprovalLapseIsWhatJudgeRunBlocksAfter(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	approved := testNow.Add(-time.Hour)
	r := Run{Tenant: "acme", Class: Rebuildable, Status: "approved", PolicyVersion: tbl.Version(), ApprovedAt: approved, Requester: alice}
	lapse := ApprovalLapse(tbl, r)
	assert.Equal(t, approved.Add(24*time.Hour), lapse, "rebuildable: 24h")

	assert.False(t, Lapsed(lapse, lapse), "valid up to its lapse")
	assert.Equal(t, Go, JudgeRun(tbl, r, lapse).Outcome)
	assert.True(t, Lapsed(lapse, lapse.Add(time.Nanosecond)))
	assert.Equal(t, CheckExpired, JudgeRun(tbl, r, lapse.Add(time.Nanosecond)).Check)

	union := r
	union.Union = []Class{Manual} // 4h
	assert.Equal(t, approved.Add(4*time.Hour), ApprovalLapse(tbl, union), "the strictest class of the request's items")

	for name, mod := range map[string]func(*Run){
		"Started":  func(r *Run) { r.Started = true },
		"Running":  func(r *Run) { r.Status = "running" },
		"Unknown":  func(r *Run) { r.Class = "no-such-class" },
		"Approved": func(r *Run) { r.ApprovedAt = time.Time{} },
	} {
		r := r
		mod(&r)
		assert.True(t, ApprovalLapse(tbl, r).IsZero(), name)
		assert.False(t, Lapsed(ApprovalLapse(tbl, r), testNow.Add(1000*time.Hour)), name)
	}
}
