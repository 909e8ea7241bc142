package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestHandedJobTheBrokerStoredNothingOfIsNoReplay hands jobs to NATS that
// the broker stores nothing of, each ending blocked: one the client
// refuses at once (a payload over the server's max_payload, which this
// console was not told: PublishMsgAsync fails before anything leaves the
// worker, after the job was marked handed), and one no stream takes (no
// responders, answered later). Their record clears handed_at (nothing of
// them may have landed), so ingest does not link a dead letter that names
// either in Dlq-Replay-Of (the chain exception takes neither for its
// dead letter's first replay, reading the same mark): the console
// replayed nothing of them.
func TestHandedJobTheBrokerStoredNothingOfIsNoReplay(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()

	t.Run("RefusedBeforeItLeft", func(t *testing.T) {
		small := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 4096 })
		_, sjs := small.Connect(t)
		_, err := sjs.CreateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})
		require.NoError(t, err)
		unknowing := replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: testSubjects(t)})
		const msgID = "landed-none-refused"
		id := b.seedItem(t, "search.index_update", msgID, nil, strings.Repeat("x", 8000))
		req := testfactory.Request(t, unknowing, oncall, []int64{id}, replay.SubmitInput{Reason: "unknowing"})
		w := replay.NewWorker(unknowing, sjs, b.auth, nil, replay.WorkerConfig{Retry: 10 * time.Millisecond}, b.log)
		wait.Until(t, "the job ended", time.Minute, func() bool {
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			return !replay.JobState(b.job(t, req.ID, id).State).Running()
		})
		j := b.job(t, req.ID, id)
		require.Equal(t, "blocked", j.State, j.Result)
		require.Contains(t, j.Result, "maximum payload exceeded", "the client refused it when handed")
		assertNoReplayOf(t, b, req.ID, id, msgID)
	})

	t.Run("NoStreamTookIt", func(t *testing.T) {
		const msgID = "landed-none-no-stream"
		id := b.seedItem(t, "search.index_update", msgID, nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, "{}")
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
		b.waitFinished(t, req.ID)
		j := b.job(t, req.ID, id)
		require.Equal(t, "blocked", j.State, j.Result)
		require.Contains(t, j.Result, "no stream stores the subject")
		assertNoReplayOf(t, b, req.ID, id, msgID)
	})
}

// assertNoReplayOf asserts that request req's job of dead letter id,
// reserved by a gate, holds no mark of a publish that may have landed,
// and that a dead letter of msgID naming id in Dlq-Replay-Of is not
// linked to it.
func assertNoReplayOf(t *testing.T, b *replayBundle, req, id int64, msgID string) {
	t.Helper()
	reserved, handed := b.handedAt(t, req, id)
	require.NotNil(t, reserved, "a gate marked it, and it was handed to NATS")
	assert.Nil(t, handed, "nothing of it may have landed")
	back := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID, CorrelationID: "corr-" + msgID,
		Payload: []byte("{}"), Headers: map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(id)}}})
	d, err := b.store.Get(context.Background(), back)
	require.NoError(t, err)
	assert.Nil(t, d.ReplayOf, "linked to a replay the broker stored nothing of")
	assert.Contains(t, d.Flags, "unlinked:replay_of")
}
