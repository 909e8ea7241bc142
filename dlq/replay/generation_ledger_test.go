package replay_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestGenerationLimitCountsReplaysWithoutTheLink: a consumer that drops
// Dlq-Replay-Of when it dead-letters a replayed message again sends back
// a dead letter that ingest cannot link (generation 0). The generation
// limit still holds: the replays of its message id the ledger holds for
// other dead letters count as the generations it came back from, so from
// the third on only manual may replay it, as a linked one; and a manual
// item whose message id the ledger holds is not published again: a
// person resolves it.
func TestGenerationLimitCountsReplaysWithoutTheLink(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: time.Second})
	run(t, b.worker(t, replay.WorkerConfig{}))

	back := func() int64 { // the consumer fails again, and its dead letter names no origin
		return testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "unlinked-loop",
			Subject: "events.acme.search.index_update", Payload: []byte(`{"doc":"loop"}`)})
	}
	first := back()
	req := b.request(t, []int64{first}, replay.SubmitInput{})
	assert.Equal(t, replaypolicy.Rebuildable, req.Class)
	b.waitStatus(t, req.ID, replay.StatusDone)
	for gen := 1; gen <= 2; gen++ {
		req := b.request(t, []int64{back()}, replay.SubmitInput{})
		assert.Equal(t, replaypolicy.Rebuildable, req.Class, "generation %d is under the limit", gen)
		b.waitStatus(t, req.ID, replay.StatusDone)
	}
	// Its message was replayed for three other dead letters (first, and the
	// two that came back): this one is generation 3.
	last := back()
	_, drafts := b.draft(t, oncall, last)
	require.Len(t, drafts, 1)
	assert.Equal(t, replaypolicy.Manual, drafts[0].Class, "a dead letter whose message came back from three replays is manual, linked or not")
	// Manual is not published twice, and without the link nothing says
	// which earlier replay this one came back from (a linked one's own
	// origin's replay is excused): it is left for a person to resolve.
	it := b.itemsOf(t, drafts)[last]
	assert.Equal(t, replaypolicy.Block.String(), it.Verdict)
	assert.Contains(t, it.SkipReason, "manual (it came back from 3 replays of its message")
	assert.Contains(t, it.SkipReason, "resolve it by hand")
}
