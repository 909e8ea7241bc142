package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevBroker20StatusHeaderReplayNeverReachesConsumer: a dead letter
// with no payload whose headers hold Status and Description (a hostile
// producer writes them; the console's own puller reads such a message as
// a dead letter, dlq/ingest_pull.go) is replayed with those headers
// forwarded. A replay always carries headers of its own (Nats-Msg-Id,
// Dlq-Replay-Of...), so with an empty payload every nats.go JetStream
// consumer of the target takes it for a status message of the server
// (jetstream.checkMsg): "409 Consumer Deleted" ends its Consume/Next/Fetch
// with ErrConsumerDeleted, and the message is never handed to the
// application, which the console has reported "replayed". Whatever the
// console does with such a dead letter (leave those two headers out, or
// refuse it), an item reported replayed must reach a consumer of the
// target as a message.
func TestRevBroker20StatusHeaderReplayNeverReachesConsumer(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "status-409", nats.Header{
		"Status": {"409"}, "Description": {"Consumer Deleted"}, "X-Custom": {"kept"},
	}, "")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	if req.Status == replay.StatusVoid { // refused (since review round 32: blocked, what the approver read is what goes)
		items, err := b.replays.Items(ctx, req.ID, 1)
		require.NoError(t, err)
		require.Len(t, items, 1)
		assert.Contains(t, items[0].SkipReason, "a server's status", "refused for what it would be read as")
		return
	}
	require.Equal(t, replay.StatusApproved, req.Status, "rebuildable needs no approval")
	run(t, b.worker(t, replay.WorkerConfig{}))
	got := b.waitFinished(t, req.ID)
	if got.Status != replay.StatusDone {
		return // refused or left out: nothing reported replayed
	}

	// A downstream service reads the target as any Go service does.
	cons, err := b.target.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "downstream", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "app.acme.search.index_update",
	})
	require.NoError(t, err)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(3*time.Second))
	require.NoError(t, err)
	var received []jetstream.Msg
	for m := range batch.Messages() {
		received = append(received, m)
	}
	require.NoError(t, batch.Error(), "request %d reported the item replayed (%s), but the target's consumer could not read it as a message", req.ID, b.jobsText(t, req.ID))
	require.Len(t, received, 1, "request %d reported the item replayed, but no message reached the target's consumer", req.ID)
	assert.Equal(t, fmt.Sprint(id), received[0].Headers().Get(replay.HeaderReplayOf))
}
