package replay_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestCountItems counts each item once by outcome: items with no job are
// to go while the request is open and not run once it ended; a left-out
// blocked item is blocked, never done.
func TestCountItems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		req  replay.Request
		p    replay.Progress
		want string
	}{
		{"WaitsForApproval", replay.Request{Status: replay.StatusPendingApproval, ItemCount: 2, SkippedCount: 1}, replay.Progress{LeftOutBlocked: 1},
			"0 replayed · 2 to go · 1 blocked"},
		{"Running", replay.Request{Status: replay.StatusRunning, ItemCount: 3}, replay.Progress{Replayed: 1, Pending: 1, Deferred: 1},
			"1 replayed · 2 to go"},
		{"Rejected", replay.Request{Status: replay.StatusRejected, ItemCount: 2, SkippedCount: 1}, replay.Progress{LeftOutSkipped: 1},
			"0 replayed · 1 skipped · 2 not run"},
		{"DoneWithProblems", replay.Request{Status: replay.StatusDoneWithProblems, ItemCount: 3},
			replay.Progress{Replayed: 1, Suppressed: 1, NeedsReconciliation: 1}, "1 replayed · 1 suppressed as a duplicate · 1 needs reconciliation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := replay.CountItems(tc.req, tc.p)
			assert.Equal(t, tc.want, c.String())
			assert.Equal(t, tc.req.ItemCount+tc.req.SkippedCount, c.Total)
		})
	}
}
