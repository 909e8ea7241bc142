package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestFirstAttemptAnsweredByAStreamMadeSinceTheList: the claim judges a
// first attempt by a list of streams read before the subject's stream was
// made (no stream, so the publish expects none); the new stream stores it
// and answers. The PubAck names a stream the claim's list did not, so the
// worker reads which stream stores the subject now: the one that answered,
// and the item is replayed (an answer is doubted only when no stream, or
// another, stores the subject).
func TestFirstAttemptAnsweredByAStreamMadeSinceTheList(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	subject := "events.acme.search.index_update"
	cfg := b.config(t)
	windows := replay.NewStreamWindows(b.js, time.Hour)
	require.Empty(t, windows.Window(ctx, subject).Stream, "no stream stores the subject when the list is read")
	cfg.Windows = windows
	events := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}})
	b.target = events

	id := b.seedItem(t, "search.index_update", "made-since-1", nats.Header{dlq.HeaderOriginalSubject: {subject}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := replay.NewWorker(replay.New(b.db.Pool, cfg), b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, Retry: 20 * time.Millisecond}, b.log)
	run(t, w)
	b.waitFinished(t, req.ID)

	j := b.job(t, req.ID, id)
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.Contains(t, j.Result, "stored as EVENTS:1")
	assert.Equal(t, 1, b.publishedAs(t, "made-since-1"))
}
