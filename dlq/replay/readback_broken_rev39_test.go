package replay

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestRev39ReadBackStopsAtAStreamThatDoesNotAnswer: once a read back from
// a stream gets no answer (NATS gone after the claim's PubAcks), the
// claim reads that stream back no more: each later read back returns the
// first one's reason at once. Before, each job of a subject read every
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
	why, _, read = w.readBack(ctx, reads, "app.acme.x", "m-3", "APP", 3)
	assert.False(t, read)
	assert.Contains(t, why, "the message at APP:3 could not be read")
	why, _, read = w.readBack(ctx, reads, "app.acme.x", "m-4", "APP", 4)
	assert.False(t, read)
	assert.Contains(t, why, "APP:3", "not read again: the stream's first failure stands for the claim")
}
