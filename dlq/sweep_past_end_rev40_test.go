package dlq

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev40SweepProvesNothingPastTheStreamsEnd: the ingest consumer reset
// forward past the stream's last sequence (nats-server takes any sequence
// for a deliver-all consumer: the on-call skipping a backlog types one
// digit too many) has its ack floor there. The sweep read the sequences up
// to the floor, found none of those the stream had not assigned yet, and
// took them for gone: the dead letters that then arrived there were never
// delivered (the consumer starts past them) nor swept (the watermark past
// them), and nothing showed it. The sweep now proves nothing past the
// stream's last sequence, and stores them as they come.
func TestRev40SweepProvesNothingPastTheStreamsEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{})
	for i := range 2 {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: fmt.Appendf(nil, "before-%d", i)})
	}
	b.peek(t, "DLQ", 2) // taken off by hand, no row
	_, err := b.js.ResetConsumerToSequence(ctx, "DLQ", "quarantine-ingest", 1000)
	require.NoError(t, err)
	require.EqualValues(t, 999, b.consumerInfo(t).AckFloor.Stream)
	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.EqualValues(t, 2, res.Stored)
	assert.LessOrEqual(t, b.sweptTo(t, "DLQ"), int64(2), "nothing past the stream's last sequence is proven")

	for i := 3; i <= 7; i++ {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: fmt.Appendf(nil, "after-%d", i)})
	}
	res, err = in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.EqualValues(t, 5, res.Stored, "the dead letters the consumer never delivers are swept")
	assert.Equal(t, 7, countRows(t, b.db.Pool, "true"))
}
