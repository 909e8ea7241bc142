package replay

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestRev39ReadBackStopsAtAStreamThatDoesNotAnswer: once reads back from
// a stream get no answer brokenAfter times in a row (NATS gone after the
// claim's PubAcks), the claim reads that stream back no more: each later
// read back says so at once. Before, each job of a subject read every
// other publish of it in turn, 2 s apiece, a claim of 2,048 of one
// subject an hour past its lease. A message missing is no such failure:
// the next one is read.
func TestRev39ReadBackStopsAtAStreamThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := natstest.Start(t)
	nc, js := srv.Connect(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})
	require.NoError(t, err)
	ack, err := js.Publish(ctx, "app.acme.x", []byte("{}"), jetstream.WithMsgID("m-1"))
	require.NoError(t, err)
	w := &Worker{js: js}
	reads := claimStreams{}

	why, _, read := w.readBack(ctx, reads, "app.acme.x", "m-2", "APP", ack.Sequence+1)
	assert.False(t, read)
	assert.Contains(t, why, "holds no message at 2")
	assert.Empty(t, reads["APP"].broken, "a message missing is no stream that does not answer")
	_, _, read = w.readBack(ctx, reads, "app.acme.x", "m-1", "APP", ack.Sequence)
	assert.True(t, read, "the next one is read")

	nc.Close() // NATS away after the claim's answers
	for seq := uint64(3); seq < 3+brokenAfter; seq++ {
		why, _, read = w.readBack(ctx, reads, "app.acme.x", "m", "APP", seq)
		assert.False(t, read)
		assert.Contains(t, why, fmt.Sprintf("the message at APP:%d could not be read", seq), "read: fewer than %d unanswered in a row so far", brokenAfter)
	}
	why, _, read = w.readBack(ctx, reads, "app.acme.x", "m", "APP", 3+brokenAfter)
	assert.False(t, read)
	assert.Contains(t, why, "stream APP stopped answering reads in this claim", "not read again")
	assert.NotContains(t, why, fmt.Sprintf("APP:%d", 3+brokenAfter))
}
