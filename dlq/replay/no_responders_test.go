package replay_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestNoRespondersWhileStreamStoresIsRetried: when the node leading a
// stream goes down, the publishes in flight to it are answered "no
// responders" for the seconds its cluster takes to elect another leader.
// The stream still stores the subject, so the item is sent again later and
// replayed; it was blocked as if no stream stored the subject (an e2e
// replay on a three-node cluster ended with a blocked item). One
// in-process server elects nobody, so the answer is given to the worker
// (its publish is real). A subject no stream stores is still blocked.
func TestNoRespondersWhileStreamStoresIsRetried(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	id := b.seedItem(t, "search.index_update", "no-leader-1", nats.Header{dlq.HeaderOriginalSubject: {"app.acme.search.index_update"}}, "{}")
	gone := b.seedItem(t, "search.index_update", "no-stream-1", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, "{}")
	req := b.request(t, []int64{id, gone}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: 50 * time.Millisecond})
	var unanswered atomic.Int32
	w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		if a != nil && a.Stream == "APP" && unanswered.Load() == 0 {
			unanswered.Add(1)
			return nil, nats.ErrNoResponders // the leader went down as it was sent
		}
		return a, err
	})
	run(t, w)

	b.waitFinished(t, req.ID)
	assert.Equal(t, int32(1), unanswered.Load())
	j := b.job(t, req.ID, id)
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.Equal(t, 1, b.onSubject(t, "app.acme.search.index_update"), "stored once")
	j = b.job(t, req.ID, gone)
	assert.Equal(t, "blocked", j.State, j.Result)
	assert.Contains(t, j.Result, "no stream stores the subject")
}
