package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev36RetryWindowJudgedAgainAsItLeaves: a retry after a lost PubAck
// of a request at 0.1 a second (a lateness tolerance of 5 s) whose slot
// comes while the target's duplicate window still covers the first
// publish, but whose turn then takes until the window has closed (an
// owning service slow to answer, a slow status read: the hook before the
// send stands in for them), is not sent: the broker would store it as a
// second message. The job waits for a person, and the target holds the
// message once.
func TestRev36RetryWindowJudgedAgainAsItLeaves(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const window = 4 * time.Second
	events := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: window})
	const subject = "events.acme.search.index_update"
	id := b.seedItem(t, "search.index_update", "slow-turn", nats.Header{dlq.HeaderOriginalSubject: {subject}}, "{}")
	batch, drafts := b.draft(t, oncall, id)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "slowly", Rates: map[int64]float64{drafts[0].ID: 0.1}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	req := reqs[0]
	require.Equal(t, replay.StatusApproved, req.Status)

	// Its first publish was stored now and its PubAck lost: the job is
	// unknown, due for its retry, its slot now.
	first := time.Now()
	b.ackLost(t, events, req.ID, subject, "slow-turn")
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_requests SET rate_next = now() WHERE id = $1`, req.ID)
	require.NoError(t, err)

	w := b.worker(t, replay.WorkerConfig{Lease: time.Minute})
	turns := 0
	w.BeforeSend(func(int64, time.Time) {
		turns++
		// The turn lasts until the broker no longer keeps the first
		// publish's id: sent now, the retry would be stored again.
		wait.Until(t, "the window past the first publish", time.Minute, func() bool { return time.Since(first) > window+300*time.Millisecond })
	})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, turns, "the retry's slot came inside the window")
	j := b.job(t, req.ID, id)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "no longer covers it")
	assert.Len(t, onSubjectMsgs(t, events, subject), 1, "the retry was not sent past the window")
}

// TestRev36SameKeptMessageDefersWithoutCounting: a job deferred twice by
// a message not its own is deferred again, not suppressed, when the
// broker keeps the same message under its id a third time (a broker whose
// clock is behind keeps one message's id past the time the worker waited
// for); its count stays and the message is recorded. One deferred twice
// by another message, or by one not recorded (an older console), ends
// suppressed as before.
func TestRev36SameKeptMessageDefersWithoutCounting(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	taken := func(msgID string) (int64, string) {
		a, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: "app.acme.search." + msgID, Data: []byte("x")}, jetstream.WithMsgID(msgID))
		require.NoError(t, err)
		id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID,
			Subject: "app.acme.search." + msgID, Headers: map[string][]string{dlq.HeaderFirstFailedAt: {time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}})
		return id, replaypolicy.KeptKey(a.Stream, a.Sequence)
	}
	same, sameKey := taken("kept-same")
	other, otherKey := taken("kept-other")
	unrecorded, unrecordedKey := taken("kept-unrecorded")
	req := b.request(t, []int64{same, other, unrecorded}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	for id, by := range map[int64]any{same: sameKey, other: otherKey + "0", unrecorded: nil} {
		_, err := b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET deferrals = 2, deferred_by = $2 WHERE dead_letter_id = $1`, id, by)
		require.NoError(t, err)
	}
	_, err := b.worker(t, replay.WorkerConfig{}).RunOnce(ctx)
	require.NoError(t, err)

	type row struct {
		state      string
		deferrals  int
		deferredBy string
	}
	got := func(id int64) row {
		var r row
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT state, deferrals, coalesce(deferred_by, '') FROM replay_jobs WHERE dead_letter_id = $1`, id).
			Scan(&r.state, &r.deferrals, &r.deferredBy))
		return r
	}
	assert.Equal(t, row{"deferred", 2, sameKey}, got(same), "the same message again: deferred, not counted")
	assert.Equal(t, row{"suppressed_duplicate", 3, otherKey}, got(other), "another message: counted")
	assert.Equal(t, row{"suppressed_duplicate", 3, unrecordedKey}, got(unrecorded), "none recorded: counted")
	assert.Equal(t, 1, b.onSubject(t, "app.acme.search.kept-same"), "nothing of the replay was stored")
}
