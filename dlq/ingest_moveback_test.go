package dlq

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestConsumerMoveBackOwedOutlivesTheReplica: a replica finds the ingest
// consumer filtered by hand, puts the filter back and stops (dies) before
// it moves the consumer back to where the filter may have started to pass
// dead letters over. The move-back is owed all the same: another replica,
// on the same database and NATS, carries it out at its first check, and
// the dead letter passed over is stored, once, like the others.
func TestConsumerMoveBackOwedOutlivesTheReplica(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// The monitor checks once when Run starts; the test checks by hand after.
	a := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour}, nil)
	wait.Until(t, "the first check", time.Minute, func() bool { return len(a.Health().Streams) == 1 })
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("before")})
	b.waitRows(t, 1)
	wait.Until(t, "before acked", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == 1 })
	a.check(ctx, "DLQ") // finds the consumer as the console wants it, at ack floor 1

	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.FilterSubject = "dlq.acme.>" })
	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.accounts.permission_grant", Data: []byte("passed over")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("after")})
	b.waitRows(t, 2)
	wait.Until(t, "the ack floor past the dead letter passed over", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == 3 })

	stopped := false
	a.beforeMoveBack = func() bool { stopped = true; return false } // the replica dies here
	a.check(ctx, "DLQ")
	require.True(t, stopped, "the check put the filter back and reached the move-back")
	require.Equal(t, "none", setting(t, "filter", &b.consumerInfo(t).Config), "filter put back")
	a.stop()
	require.Zero(t, countRows(t, b.db.Pool, "payload = 'passed over'"), "the replica died before it moved the consumer back")

	b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: 50 * time.Millisecond}, nil)
	wait.Until(t, "the dead letter passed over stored by the other replica", 30*time.Second, func() bool {
		return countRows(t, b.db.Pool, "payload = 'passed over'") == 1
	})
	assert.Equal(t, 3, countRows(t, b.db.Pool, "true"), "what was stored is not stored twice")
}

// owedFrom is the sequence the move-back owed on the DLQ stream's consumer
// is from; -1 when none is owed.
func (b *bundle) owedFrom(t *testing.T) int64 {
	t.Helper()
	var from int64 = -1
	err := b.db.Pool.QueryRow(context.Background(),
		`SELECT coalesce(min(from_seq), -1) FROM ingest_moveback_owed WHERE stream = 'DLQ' AND consumer = 'quarantine-ingest'`).Scan(&from)
	require.NoError(t, err)
	return from
}

// TestConsumerMoveBackOwedKeepsTheEarliest: a move-back owed again from
// a later sequence keeps the earlier one (0, the stream's first, is the
// earliest of all), and the runtime role cannot make it later by hand.
func TestConsumerMoveBackOwedKeepsTheEarliest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in := NewIngester(IngestConfig{}, b.js, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	for _, c := range []struct {
		from uint64
		want int64
	}{{9, 9}, {5, 5}, {9, 5}, {0, 0}, {3, 0}} {
		require.NoError(t, in.owe(ctx, "DLQ", c.from, []string{"filter: dlq.acme.> → none"}))
		assert.Equal(t, c.want, b.owedFrom(t), "owed from #%d", c.from)
	}
	_, err := b.db.Pool.Exec(ctx, `UPDATE ingest_moveback_owed SET from_seq = 7`)
	assert.ErrorContains(t, err, "never replaced by a later one")
	assert.Equal(t, int64(0), b.owedFrom(t))
}

// TestConsumerMoveBackOwedDoneOnceByTwoReplicasAtOnce: two replicas that
// find the same move-back owed at the same check carry it out one after
// the other: the first moves the consumer back and removes it, the second
// finds nothing owed and leaves the consumer where the first put it. The
// dead letter passed over is stored.
func TestConsumerMoveBackOwedDoneOnceByTwoReplicasAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour}, nil)
	wait.Until(t, "the first check", time.Minute, func() bool { return len(r.Health().Streams) == 1 })
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.FilterSubject = "dlq.acme.>" })
	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.accounts.permission_grant", Data: []byte("passed over")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("after")})
	b.waitRows(t, 1)
	wait.Until(t, "the ack floor past the dead letter passed over", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == 2 })
	// The filter put back (by hand, say) after a replica owed the move-back.
	require.NoError(t, r.owe(ctx, "DLQ", 1, []string{"filter: dlq.acme.> → none"}))
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.FilterSubject = "" })

	other := NewIngester(IngestConfig{}, b.js, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	owed := make([]bool, 2)
	errs := make([]error, 2)
	for i, in := range []*Ingester{r.Ingester, other} {
		wg.Go(func() { owed[i], errs[i] = in.moveBack(ctx, "DLQ") })
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.True(t, owed[0] != owed[1], "one replica moves the consumer back, the other finds nothing owed: %v", owed)
	assert.Equal(t, int64(-1), b.owedFrom(t), "nothing owed once done")
	wait.Until(t, "the dead letter passed over stored", time.Minute, func() bool {
		return countRows(t, b.db.Pool, "payload = 'passed over'") == 1
	})
	assert.Equal(t, 2, countRows(t, b.db.Pool, "true"), "what was stored is not stored twice")
}

// TestConsumerMoveBackWaitsForTheSettingsPutBack: a replica owed the
// move-back and died before it put the filter back. Another replica's
// check that reaches the owed move-back before it puts the filter back
// (it read the consumer earlier) moves nothing and leaves it owed: moved
// back under the filter, the consumer would pass the dead letters over
// again, with nothing owed any more. The check that puts the filter back
// then moves the consumer back, and the dead letter passed over is stored.
func TestConsumerMoveBackWaitsForTheSettingsPutBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour}, nil)
	wait.Until(t, "the first check", time.Minute, func() bool { return len(r.Health().Streams) == 1 })
	b.editConsumer(t, func(c *jetstream.ConsumerConfig) { c.FilterSubject = "dlq.acme.>" })
	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.accounts.permission_grant", Data: []byte("passed over")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("after")})
	b.waitRows(t, 1)
	wait.Until(t, "the ack floor past the dead letter passed over", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == 2 })
	require.NoError(t, r.owe(ctx, "DLQ", 1, []string{"filter: dlq.acme.> → none"})) // and died

	owed, err := r.moveBack(ctx, "DLQ")
	require.NoError(t, err)
	assert.True(t, owed)
	assert.Equal(t, int64(1), b.owedFrom(t), "still owed while the filter stays")
	assert.Equal(t, "dlq.acme.>", setting(t, "filter", &b.consumerInfo(t).Config))

	r.check(ctx, "DLQ")
	wait.Until(t, "the dead letter passed over stored", time.Minute, func() bool {
		return countRows(t, b.db.Pool, "payload = 'passed over'") == 1
	})
	assert.Equal(t, int64(-1), b.owedFrom(t), "nothing owed once done")
	assert.Equal(t, 2, countRows(t, b.db.Pool, "true"), "what was stored is not stored twice")
}
