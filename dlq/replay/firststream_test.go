package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRetryIntoStreamMadeAsTheFirstAttemptWent: the target stream is made
// again right before a replay (no wait between: it is created in the same
// instant, by the clocks, as the first attempt), and the first publish's
// PubAck is lost. The publish gate recorded the stream the first attempt
// was sent to and when it was created, so the retry knows its stream is
// that very one, by no clock: it is retried, the broker drops it as a
// duplicate of the first publish, and the item is replayed once, not sent
// to a person. The margin for the clocks is 30 s here, so that the clocks
// alone could never tell this stream from one made after the first
// attempt.
func TestRetryIntoStreamMadeAsTheFirstAttemptWent(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	cfg := b.config(t)
	cfg.WindowMargin = 30 * time.Second
	b.replays = replay.New(b.db.Pool, cfg)
	msgID := "made-as-sent-1"
	id := b.seedItem(t, "search.index_update", msgID, nil, "{}")
	require.NoError(t, b.js.DeleteStream(ctx, "APP"))
	b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})
	info, err := b.target.Info(ctx)
	require.NoError(t, err)

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	j := b.job(t, req.ID, id)
	require.Equal(t, "unknown", j.State, j.Result)
	require.Equal(t, 1, b.publishedAs(t, msgID), "the broker stored the first publish")
	var stream *string
	var created *time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT first_stream, first_stream_created FROM replay_jobs WHERE request_id = $1 AND dead_letter_id = $2`,
		req.ID, id).Scan(&stream, &created))
	if assert.NotNil(t, stream, "the stream the first attempt was sent to is recorded") && assert.NotNil(t, created) {
		assert.Equal(t, "APP", *stream)
		assert.True(t, created.Equal(info.Created.Truncate(time.Microsecond)), "recorded as created at %s, the stream says %s", *created, info.Created)
	}

	j = b.settled(t, w, req.ID, id)
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.True(t, j.Duplicate, "the broker dropped the retry as a duplicate of the first publish")
	assert.Equal(t, 2, j.Attempts)
	assert.Equal(t, 1, b.publishedAs(t, msgID), "one effect")
	b.waitStatus(t, req.ID, replay.StatusDone)
}
