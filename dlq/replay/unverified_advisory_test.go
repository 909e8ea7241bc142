package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestUnverifiedAdvisoryKeepsSubjectButIsNotReplayed: a captured advisory
// whose consumer was gone when it was ingested is stored flagged
// advisory_unverified with its original subject kept (the give-up may be
// real). The replay rules keep it out: the draft leaves it out saying the
// give-up could not be verified, and the worker blocks one of a request
// approved before the flag (set here after the approval), sending nothing.
func TestUnverifiedAdvisoryKeepsSubjectButIsNotReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	letter := func(msgID string) int64 {
		return testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID,
			CorrelationID: "corr-" + msgID, Payload: []byte(`{"doc":"unverified"}`)})
	}
	flag := func(id int64) {
		_, err := b.db.Pool.Exec(ctx, `UPDATE dead_letters SET flags = array_append(flags, $2) WHERE id = $1`, id, dlq.FlagAdvisoryUnverified)
		require.NoError(t, err)
	}
	unverified, clean := letter("unv-1"), letter("unv-clean")
	flag(unverified)

	_, drafts := b.draft(t, oncall, unverified, clean)
	reasons := skipReasonsOf(t, b.replays, drafts)
	assert.Contains(t, reasons[unverified], "could not be verified")
	assert.Contains(t, reasons[unverified], "still in its stream")
	assert.Empty(t, reasons[clean], "a dead letter without the flag drafts as before")

	t.Run("BlockedByTheWorker", func(t *testing.T) {
		later := letter("unv-later")
		req := b.request(t, []int64{later}, replay.SubmitInput{Reason: "consumer fixed"})
		require.Equal(t, replay.StatusApproved, req.Status)
		flag(later)
		run(t, b.worker(t, replay.WorkerConfig{}))
		b.waitFinished(t, req.ID)
		j := b.job(t, req.ID, later)
		assert.Equal(t, "blocked", j.State, j.Result)
		assert.Contains(t, j.Result, "could not be verified")
		assert.Nil(t, j.FirstAttemptAt, "nothing was sent")
		assert.Equal(t, 0, b.onSubject(t, "app.acme.search.index_update"))
	})
}
