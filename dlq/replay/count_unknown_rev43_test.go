package replay_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev43UnknownIsNotCountedToGo: an item retried after a publish that
// got no PubAck may have landed. The emergency stop page and the replays
// list (ItemCounts) counted it "to go" with the items never sent, while
// the request's own page said "retrying (no PubAck)": an on-call deciding
// whether to stop, or whether the target may hold the effect, read that
// nothing of it had left the console.
func TestRev43UnknownIsNotCountedToGo(t *testing.T) {
	t.Parallel()
	n := replay.CountItems(replay.Request{Status: replay.StatusRunning, ItemCount: 4},
		replay.Progress{Unknown: 1, Replayed: 1, Pending: 1, Deferred: 1})
	assert.Equal(t, 2, n.ToGo)
	assert.Equal(t, 1, n.Unknown)
	assert.Equal(t, 4, n.Total)
	assert.Equal(t, "1 replayed · 2 to go · 1 retrying (no PubAck)", n.String())
}
