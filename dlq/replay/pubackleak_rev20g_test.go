package replay_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevReplay20LostPubAcksWedgeEveryLaterPublish: the worker publishes
// with PublishMsgAsync on the process's one JetStream context (app wires
// every worker to it, as jetstream.New(nc) makes it: at most 4,000 PubAcks
// outstanding, no ack timeout). When no answer comes for a publish, the
// worker waits AckTimeout, judges the outcome unknown and moves on, but
// never lets go of the future: nats.go keeps it among the outstanding
// acks until an answer comes, or until the connection reconnects. A
// target no stream stores, taken by a plain NATS subscriber (a supported
// target: "one no stream stores goes the first time"), never answers; so
// does a clustered stream that lost its quorum. Once 4,000 such answers
// are missing, every later PublishMsgAsync of the process stalls 200 ms
// and fails (nats: stalled with too many outstanding async published
// messages), which the worker takes for "not sent" and tries again for
// ever: no replay of any tenant, to any healthy stream, is ever published
// again until the process restarts. Each lost future also keeps its
// message (payload and headers) in memory.
//
// Here 4,000 items are replayed to such a silent subject (their outcome
// is unknown, then needs reconciliation: fine), and then one item to a
// healthy stream, EVENTS, which must be replayed.
func TestRevReplay20LostPubAcksWedgeEveryLaterPublish(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.js.DeleteStream(ctx, "APP")) // app.acme.search.> is a plain NATS subject now
	events := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}})

	// A plain service that takes the subject and answers nothing.
	var heard atomic.Int64
	sub, err := b.nc.Subscribe("app.acme.search.>", func(*nats.Msg) { heard.Add(1) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	const silent = 4000 // jetstream's default ceiling of outstanding async PubAcks
	letters := make([]testfactory.Letter, silent)
	for i := range letters {
		letters[i] = testfactory.Letter{ItemType: "search.index_update", MsgID: fmt.Sprintf("silent-%d", i), Payload: []byte(`{}`)}
	}
	ids := testfactory.DeadLetters(t, b.db.Pool, letters...)
	quiet := b.request(t, ids, replay.SubmitInput{Reason: "reindex"})

	w := b.worker(t, replay.WorkerConfig{AckTimeout: 300 * time.Millisecond})
	wait.For(t, "every silent item published once", 3*time.Minute, func() error {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		var left int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_jobs WHERE request_id = $1 AND first_attempt_at IS NULL
            AND state IN ('pending', 'claimed')`, quiet.ID).Scan(&left))
		if left > 0 {
			return fmt.Errorf("%d not yet published: %w", left, wait.ErrNotYet)
		}
		return nil
	})
	require.EqualValues(t, silent, heard.Load(), "the plain subscriber received each silent item once, and answered none")

	// Now one item to a healthy stream: nothing about it is wrong.
	victim := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "healthy-1",
		Subject: "events.acme.search.index_update", Payload: []byte(`{"doc":1}`)})
	req := b.request(t, []int64{victim}, replay.SubmitInput{Reason: "reindex"})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		if j := b.job(t, req.ID, victim); j.State != "pending" && j.State != "claimed" {
			break
		}
	}
	j := b.job(t, req.ID, victim)
	info, err := events.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, "replayed", j.State, "a replay to a healthy stream is never published once %d PubAcks went missing elsewhere: %s (attempts %d)", silent, j.Result, j.Attempts)
	assert.EqualValues(t, 1, info.State.Msgs, "stream EVENTS stored the replay")
}
