package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestIngestOldAcksOfAReplicaNotSettleTheConsumerAnotherMadeAgain (review):
// two consoles ingest from one durable consumer (DESIGN: scale-out). A's
// writer waits for PostgreSQL with old dead letters in hand, and its puller
// is blocked handing the next one over, so the server's "409 Consumer
// Deleted" waits in A's subscription behind it. The DLQ stream is deleted;
// B hears it at once and makes stream and consumer again (3 s later); A's
// monitor (HealthEvery) does not look in between, and when it looks it only
// asks whether the consumer exists, not whether it is the one A started on.
// A new dead letter PostgreSQL refuses at first is delivered to B and
// nak'd. When the lock goes, A acks old #1 under its incarnation, which was
// never retired: the server applies it to the new consumer's #1, the new
// dead letter, which is never delivered again (lost).
func TestIngestOldAcksOfAReplicaNotSettleTheConsumerAnotherMadeAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	refuseNewOne(t, b)
	unlock, lockWaited := lockDeadLetters(t, b)

	// RetryUnstorable leaves the test seconds to drop the trigger before
	// "new 1"'s maxRefusedDeliveries-th delivery, which would store its
	// position form (content_refused) instead of waiting.
	cfg := IngestConfig{Workers: 1, BatchSize: 1, MaxWait: 10 * time.Millisecond, RetryUnstorable: time.Second}
	acfg := cfg
	acfg.HealthEvery = time.Hour // A's monitor looked at start; it does not look again during the test
	b.start(t, acfg, nil)
	ackPending := func(n int) func() bool {
		return func() bool {
			cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
			if err != nil {
				return false
			}
			info, err := cons.Info(ctx)
			return err == nil && info.NumAckPending == n
		}
	}
	// old 0 in A's writer (waiting for the lock), old 1 and 2 in the
	// channel (2·BatchSize), old 3 in A's puller, blocked handing it over.
	for _, p := range []string{"old 0", "old 1", "old 2", "old 3"} {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p)})
	}
	wait.Until(t, "A's writer waiting for the lock", time.Minute, lockWaited)
	wait.Until(t, "the old dead letters delivered to A", time.Minute, ackPending(4))

	waiting := func() int {
		cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
		require.NoError(t, err)
		info, err := cons.Info(ctx)
		require.NoError(t, err)
		return info.NumWaiting
	}
	before := waiting()
	cfg.HealthEvery = 100 * time.Millisecond
	b.start(t, cfg, nil) // B: nothing is left to deliver to it
	wait.Until(t, "B's pull request waiting", time.Minute, func() bool { return waiting() > before })

	require.NoError(t, b.js.DeleteStream(ctx, "DLQ"))
	wait.Until(t, "B made the DLQ stream and its consumer again", time.Minute, func() bool {
		_, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
		return err == nil
	})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("new 1")})
	wait.Until(t, "new #1 delivered (to B)", time.Minute, ackPending(1))

	require.NoError(t, unlock())
	b.waitRows(t, 4) // the old ones, stored
	b.dropTrigger(t, "test_refuses_new")
	b.waitDrained(t) // a message nak'd to come again is still pending: drained means acked
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'new 1'"),
		"the new dead letter is stored: an old ack of A must not settle it")
}

// TestIngestMonitorRetiresAConsumerMadeAgain: the monitor compares the
// consumer it finds with the one the session reads by creation time, not
// only whether one exists. A's writer waits for PostgreSQL with dead
// letters in hand and its puller is blocked handing the next one over, so
// no "409 Consumer Deleted" reaches it. The DLQ stream is deleted and made
// again at once with its consumer (as another replica would). A's monitor
// finds a consumer made at another time: A retires what it holds and
// consumes the new consumer (its pull request waits there) while its writer
// is still stuck. Before, it asked only whether a consumer of that name
// existed, and A went on with the old one until the lock went.
func TestIngestMonitorRetiresAConsumerMadeAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	unlock, lockWaited := lockDeadLetters(t, b)

	cfg := IngestConfig{Workers: 1, BatchSize: 1, MaxWait: 10 * time.Millisecond, HealthEvery: 100 * time.Millisecond}
	b.start(t, cfg, nil)
	info := func() *jetstream.ConsumerInfo {
		cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
		if err != nil {
			return nil
		}
		info, err := cons.Info(ctx)
		if err != nil {
			return nil
		}
		return info
	}
	for _, p := range []string{"old 0", "old 1", "old 2", "old 3"} {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p)})
	}
	wait.Until(t, "A's writer waiting for the lock", time.Minute, lockWaited)
	wait.Until(t, "the old dead letters delivered to A", time.Minute, func() bool {
		i := info()
		return i != nil && i.NumAckPending == 4
	})
	created := info().Created

	require.NoError(t, b.js.DeleteStream(ctx, "DLQ"))
	other := NewIngester(cfg, b.js, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, other.Setup(ctx))
	require.False(t, info().Created.Equal(created))
	wait.Until(t, "A pulling from the consumer made again, its writer still stuck", 30*time.Second, func() bool {
		i := info()
		return i != nil && i.NumWaiting > 0
	})

	require.NoError(t, unlock())
	b.waitRows(t, 4) // what A held is stored all the same
	i := info()
	require.NotNil(t, i)
	assert.Zero(t, i.NumAckPending, "nothing of the old consumer settled on the new one")
}
