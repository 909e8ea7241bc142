package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// consumerInfo reads the ingest consumer on the DLQ stream.
func (b *bundle) consumerInfo(t *testing.T) *jetstream.ConsumerInfo {
	t.Helper()
	cons, err := b.js.Consumer(context.Background(), "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	return cons.CachedInfo()
}

// editConsumer changes the ingest consumer as `nats consumer edit` would.
func (b *bundle) editConsumer(t *testing.T, edit func(*jetstream.ConsumerConfig)) {
	t.Helper()
	cfg := b.consumerInfo(t).Config
	edit(&cfg)
	_, err := b.js.UpdateConsumer(context.Background(), "DLQ", cfg)
	require.NoError(t, err)
}

// setting is the value of the consumer setting name in c.
func setting(t *testing.T, name string, c *jetstream.ConsumerConfig) string {
	t.Helper()
	for _, s := range consumerSettings {
		if s.name == name {
			return s.value(c)
		}
	}
	t.Fatalf("no setting %q", name)
	return ""
}

// TestConsumerChangedByHandIsPutBack: every change made by hand to the
// ingest consumer that would keep dead letters from the console (another
// tenant's filtered out, a pause, deliveries given up on, pull requests
// refused) is put back by the next check, logged and counted, and the dead
// letter published meanwhile is stored.
func TestConsumerChangedByHandIsPutBack(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]func(*jetstream.ConsumerConfig){
		"Filter":          func(c *jetstream.ConsumerConfig) { c.FilterSubject = "dlq.acme.>" },
		"Filters":         func(c *jetstream.ConsumerConfig) { c.FilterSubjects = []string{"dlq.acme.>", "dlq.initech.>"} },
		"MaxDeliver":      func(c *jetstream.ConsumerConfig) { c.MaxDeliver = 1 },
		"AckWait":         func(c *jetstream.ConsumerConfig) { c.AckWait = time.Second },
		"MaxAckPending":   func(c *jetstream.ConsumerConfig) { c.MaxAckPending = 1 },
		"MaxRequestBatch": func(c *jetstream.ConsumerConfig) { c.MaxRequestBatch = 1 },
		"HeadersOnly":     func(c *jetstream.ConsumerConfig) { c.HeadersOnly = true },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: 50 * time.Millisecond}, nil)
			publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("before")})
			b.waitRows(t, 1)

			b.editConsumer(t, edit)
			// The counter goes up just after the update returns.
			wait.Until(t, "the consumer's settings put back and counted", time.Minute, func() bool {
				return len(driftOf(b.consumerInfo(t).Config, r.consumerConfig()).changes) == 0 &&
					testutil.ToFloat64(r.metrics.ConsumerRepaired.WithLabelValues("DLQ")) >= 1
			})
			publish(t, b.js, &nats.Msg{Subject: "dlq.globex.accounts.permission_grant", Data: []byte("other tenant")})
			b.waitRows(t, 2)
			assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'other tenant'"))
			assert.Empty(t, r.Health().Streams[0].ConsumerDrift)
		})
	}
}

// TestConsumerFilterSkippedDeadLettersDeliveredAgain: while the filter
// set by hand is in place, the consumer passes over another tenant's dead
// letter for good (putting the filter back does not deliver it), and its
// ack floor moves past it once a later dead letter is acked: neither the
// pending count nor the ack floor shows it. The check that puts the
// filter back moves the consumer back to where it may have started to
// pass dead letters over, and it is stored; what was stored already is
// not stored twice.
func TestConsumerFilterSkippedDeadLettersDeliveredAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// The monitor checks once when Run starts; the test checks by hand after.
	r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour}, nil)
	wait.Until(t, "the first check", time.Minute, func() bool { return len(r.Health().Streams) == 1 })
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("before")})
	b.waitRows(t, 1)
	wait.Until(t, "before acked", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == 1 })
	r.check(ctx, "DLQ") // finds the consumer as the console wants it, at ack floor 1

	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.FilterSubject = "dlq.acme.>" })
	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.accounts.permission_grant", Data: []byte("passed over")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("after")})
	b.waitRows(t, 2)
	wait.Until(t, "the ack floor past the dead letter passed over", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == 3 })
	require.Zero(t, countRows(t, b.db.Pool, "payload = 'passed over'"), "the filter passed it over")

	r.check(ctx, "DLQ")
	wait.Until(t, "the dead letter passed over stored", time.Minute, func() bool {
		return countRows(t, b.db.Pool, "payload = 'passed over'") == 1
	})
	assert.Equal(t, "none", setting(t, "filter", &b.consumerInfo(t).Config), "filter")
	assert.Equal(t, 3, countRows(t, b.db.Pool, "true"), "what was stored is not stored twice")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.metrics.ConsumerRepaired.WithLabelValues("DLQ")))
}

// TestConsumerPausedIsResumed: a consumer paused by hand (nats consumer
// pause) delivers nothing while JetStream's pending count still looks
// like a backlog that drains; the next check resumes it and the dead
// letter waiting is stored.
func TestConsumerPausedIsResumed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: 50 * time.Millisecond}, nil)
	_, err := b.js.PauseConsumer(ctx, "DLQ", "quarantine-ingest", time.Now().Add(time.Hour))
	require.NoError(t, err)
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("while paused")})
	b.waitRows(t, 1)
	info := b.consumerInfo(t)
	assert.False(t, info.Paused)
	assert.Equal(t, "none", setting(t, "pause_until", &info.Config), "pause_until")
	wait.Until(t, "the resume counted", time.Minute, func() bool {
		return testutil.ToFloat64(r.metrics.ConsumerRepaired.WithLabelValues("DLQ")) >= 1
	})
}

// TestConsumerDeletedIsMadeAgain: a consumer deleted by hand is made
// again (by the check that misses it) and the dead letters published
// since are stored.
func TestConsumerDeletedIsMadeAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: 50 * time.Millisecond}, nil)
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("before")})
	b.waitRows(t, 1)
	created := b.consumerInfo(t).Created
	require.NoError(t, b.js.DeleteConsumer(ctx, "DLQ", "quarantine-ingest"))
	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.accounts.permission_grant", Data: []byte("after")})
	b.waitRows(t, 2)
	assert.NotEqual(t, created, b.consumerInfo(t).Created, "made again")
	assert.Equal(t, 2, countRows(t, b.db.Pool, "true"))
}

// TestConsumerMadeByHandUnfixablyIsReported: a consumer made again by hand
// to deliver only new messages (JetStream refuses to change a deliver
// policy) would never deliver the dead letters the stream held before it;
// the console cannot put that back, and says so at once: health, the
// dashboard's stalled sentences, a gauge, and Setup's error, naming the
// command that makes it right.
func TestConsumerMadeByHandUnfixablyIsReported(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: 50 * time.Millisecond}, nil)
	wait.Until(t, "ingest running", time.Minute, func() bool { return len(r.Health().Streams) == 1 })
	byHand := r.consumerConfig()
	byHand.DeliverPolicy = jetstream.DeliverNewPolicy
	// The console makes its own again as soon as it misses it: try until
	// the one made by hand is there.
	wait.Until(t, "the consumer made by hand", time.Minute, func() bool {
		if err := b.js.DeleteConsumer(ctx, "DLQ", "quarantine-ingest"); err != nil {
			return false
		}
		_, err := b.js.CreateConsumer(ctx, "DLQ", byHand)
		return err == nil
	})
	wait.Until(t, "the drift reported", time.Minute, func() bool { return r.Health().Streams[0].ConsumerDrift != "" })
	h := r.Health()
	assert.Contains(t, h.Streams[0].ConsumerDrift, "deliver_policy: new → all")
	assert.Contains(t, h.Streams[0].ConsumerDrift, "nats consumer rm DLQ quarantine-ingest")
	require.NotEmpty(t, h.Stalled(time.Now()))
	assert.Contains(t, h.Stalled(time.Now())[0], "could not be put back")

	reg := prometheus.NewRegistry()
	reg.MustRegister(newHealthCollector(r.metrics.health))
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP quarantine_ingest_consumer_drift 1 while the console's ingest consumer has settings the console could not put back (made by hand with another deliver policy or start, or the update failed): dead letters may never be delivered; the dashboard and the log say which.
# TYPE quarantine_ingest_consumer_drift gauge
quarantine_ingest_consumer_drift{stream="DLQ"} 1
`), "quarantine_ingest_consumer_drift"))

	in := NewIngester(IngestConfig{}, b.js, b.store, NewMetrics(prometheus.NewRegistry()), r.log)
	assert.ErrorIs(t, in.Setup(ctx), errConsumerChanged)
}

// TestUndelivered: the stream's messages after the last one delivered,
// whatever the consumer's filter, and none below the stream's first.
func TestUndelivered(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                   string
		last, first, delivered uint64
		want                   uint64
	}{
		{"Empty", 0, 0, 0, 0},
		{"NoneDelivered", 5, 1, 0, 5},
		{"SomeDelivered", 5, 1, 3, 2},
		{"AllDelivered", 5, 1, 5, 0},
		{"FrontDiscarded", 10, 8, 2, 3},
		{"DeliveredAheadOfAnOlderRead", 5, 1, 7, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, undelivered(c.last, c.first, c.delivered))
		})
	}
}
