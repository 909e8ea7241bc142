package replay_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevReplay32AppliedIsNeverCountedReplayed: an item whose outcome
// nobody could know, settled "applied" by a person who checked the target,
// is stored as a replayed job (the ledger holding it), and every page
// counted and showed it as replayed: "2 replayed · done", though "replayed" means the broker stored this replay's publish
// (DESIGN.md, invariant 13), which nobody knows of it. It is counted and
// shown apart now, "applied (found by a person)", in the request's
// progress, its status sentence, the list's counts and the item's outcome;
// the request is still done. Its dead letter is resolved, not replayed:
// the list, the dead letter's page and a status=replayed filter said
// "replayed" of it (review round 33).
func TestRevReplay32AppliedIsNeverCountedReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	// A stream in memory: a lost PubAck cannot be retried (its window
	// does not survive a restart), so the first item needs a person at once.
	b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Storage: jetstream.MemoryStorage})
	seed := func(msgID string) int64 {
		return b.seedItem(t, "search.index_update", msgID, nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, "{}")
	}
	ids := []int64{seed("rr32-applied-1"), seed("rr32-applied-2")}
	req := b.request(t, ids, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{})
	loseAcks(w, 1)
	run(t, w)
	b.waitStatus(t, req.ID, replay.StatusDoneWithProblems)

	var unknown int64
	for _, id := range ids {
		if b.job(t, req.ID, id).State == string(replay.JobNeedsReconciliation) {
			unknown = id
		}
	}
	require.NotZero(t, unknown, "one item's PubAck was lost: %s", b.jobsText(t, req.ID))
	require.NoError(t, b.replays.Reconcile(ctx, req.ID, unknown, approver1,
		replay.ReconcileInput{Choice: replaypolicy.Applied, Note: "the index holds it"}, quarantine.RequestMeta{}))

	done := b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Contains(t, done.StatusReason, "1 replayed, 1 applied (found by a person)")
	p, err := b.replays.Progress(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, p.Replayed, "only the item the broker stored")
	assert.Equal(t, 1, p.Applied)
	assert.Equal(t, 2, p.Total())
	counts := replay.CountItems(done, p)
	assert.Equal(t, "1 replayed · 1 applied (found by a person)", counts.String())

	j := b.job(t, req.ID, unknown)
	assert.Equal(t, string(replay.JobReplayed), j.State, "stored as a replayed job: the ledger holds it")
	assert.Equal(t, replay.OutcomeApplied, replay.ShownOutcome(replay.JobState(j.State), j.Result))
	d, err := b.store.Get(ctx, unknown)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusResolved, d.Status, "its dead letter is resolved (by the person), not replayed")

	c, err := b.replays.Counts(ctx, replay.ListFilter{Tenants: []string{"acme"}, Viewer: oncall, Limit: 50})
	require.NoError(t, err)
	assert.Equal(t, 1, c.Counts.Replayed, "the list counts it apart too")
	assert.Equal(t, 1, c.Counts.Applied)
}
