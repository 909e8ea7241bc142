package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestReturnedReplayWhoseChainRetentionCutIsBlockedAtExecution: an
// analytics event (dedupe) A is replayed, fails downstream and comes back
// as B, which is replayed and fails again as C. C is requested while its
// chain is whole (its draft lets it go); before a worker runs it,
// retention removes A and B. The worker cannot tell any more whether the
// ledger's replay of A is one its chain explains: it blocks C for a
// person, naming the request and the cut, instead of skipping it as
// already replayed (which would end the request green with the event
// lost), and publishes nothing.
func TestReturnedReplayWhoseChainRetentionCutIsBlockedAtExecution(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	const msgID, subject = "chain-cut-1", "app.acme.analytics.event"
	letter := func(at time.Time, replayOf int64) int64 {
		l := testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, Payload: []byte(`{"clicks":3}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	settled := func(req replay.Request, id int64) string {
		var state string
		wait.Until(t, fmt.Sprintf("the job of %d to settle", id), time.Minute, func() bool {
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			state = b.job(t, req.ID, id).State
			return state != "pending" && state != "claimed" && state != "deferred"
		})
		return state
	}
	replayOnce := func(id int64) replay.Request {
		req := b.request(t, []int64{id}, replay.SubmitInput{Reason: "consumer fixed"})
		require.Equal(t, replay.StatusApproved, req.Status)
		return req
	}

	a := letter(time.Now().Add(-72*time.Hour), 0)
	first := replayOnce(a)
	require.Equal(t, "replayed", settled(first, a))
	back := letter(time.Now().Add(-48*time.Hour), a)
	require.Equal(t, "replayed", settled(replayOnce(back), back))
	again := letter(time.Now().Add(-time.Hour), back)
	check, reason := draftVerdict(t, b, again)
	require.Empty(t, check, "its chain is whole: both replays up it are explained (%s)", reason)
	last := replayOnce(again)

	for _, id := range []int64{a, back} { // as retention's deleteBatch removes them
		_, err := b.db.OwnerPool.Exec(ctx, `WITH gone AS (DELETE FROM dead_letters WHERE id = $1 RETURNING id, dead_lettered_at, tenant, msg_id, generation)
            UPDATE replay_items i SET payload = NULL, origin_tenant = g.tenant, origin_msg_id = g.msg_id, origin_generation = g.generation
            FROM gone g WHERE i.dead_letter_id = g.id AND i.dead_lettered_at = g.dead_lettered_at`, id)
		require.NoError(t, err)
	}

	assert.Equal(t, "blocked", settled(last, again))
	j := b.job(t, last.ID, again)
	assert.Contains(t, j.Result, fmt.Sprintf("already replayed by replay request %d", first.ID))
	assert.Contains(t, j.Result, fmt.Sprintf("retention removed dead letter %d", back))
	assert.Equal(t, 2, b.onSubject(t, subject), "nothing more was published")
	assert.Equal(t, replay.StatusDoneWithProblems, b.waitFinished(t, last.ID).Status, "not green: the event's effect is for a person")
}
