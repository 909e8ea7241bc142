package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
