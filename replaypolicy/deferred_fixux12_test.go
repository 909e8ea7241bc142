package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFixUx12DeferredRequestDoesNotLapse: an approved request a worker
// deferred for the target's duplicate window (Run.Deferred) counts as
// started: its approval no longer lapses (ApprovalLapse zero), so the
// wait the console chose does not block it as expired; one neither
// started nor deferred still lapses at StartBy.
func TestFixUx12DeferredRequestDoesNotLapse(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	r := countedRun(tbl)
	lapse := StartBy(tbl, r.request(), r.ApprovedAt)
	assert.Equal(t, lapse, ApprovalLapse(tbl, r))
	assert.Equal(t, CheckExpired, JudgeRun(tbl, r, lapse.Add(time.Minute)).Check)

	r.Deferred = true
	assert.True(t, ApprovalLapse(tbl, r).IsZero(), "the console chose the wait: no lapse")
	after := JudgeRun(tbl, r, lapse.Add(time.Hour))
	assert.NotEqual(t, CheckExpired, after.Check, after.Reason)
}
