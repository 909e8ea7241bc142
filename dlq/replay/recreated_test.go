package replay_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// keptListWorker is a worker whose window reader answers from a list of
// streams kept for an hour: a change of a stream since the list was read
// is seen only by a read made afresh.
func (b *replayBundle) keptListWorker(t *testing.T, cfg replay.WorkerConfig) *replay.Worker {
	t.Helper()
	c := b.config(t)
	c.Windows = replay.NewStreamWindows(b.js, time.Hour)
	cfg.Poll, cfg.AckTimeout = 20*time.Millisecond, time.Minute
	return replay.NewWorker(replay.New(b.db.Pool, c), b.js, b.auth, nil, cfg, b.log)
}

// firstPublishLost replays one item whose first publish the broker stores
// while its PubAck is lost (the job is unknown), with w, and returns the
// request's and the dead letter's ids.
func (b *replayBundle) firstPublishLost(t *testing.T, w *replay.Worker, msgID string) (requestID, id int64) {
	t.Helper()
	id = b.seedItem(t, "search.index_update", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	loseAcks(w, 1)
	_, err := w.RunOnce(context.Background())
	require.NoError(t, err)
	j := b.job(t, req.ID, id)
	require.Equal(t, "unknown", j.State, j.Result)
	require.Equal(t, 1, b.publishedAs(t, msgID), "the broker stored the first publish (a consumer may have applied it)")
	return req.ID, id
}

// settled runs w until the job of dead letter id in request requestID is
// no longer unknown, and returns it.
func (b *replayBundle) settled(t *testing.T, w *replay.Worker, requestID, id int64) jobRow {
	t.Helper()
	wait.Until(t, "the retry", time.Minute, func() bool {
		_, err := w.RunOnce(context.Background())
		require.NoError(t, err)
		return b.job(t, requestID, id).State != "unknown"
	})
	return b.job(t, requestID, id)
}

// TestRetryJudgesTheStreamAsItIsNow: a retry after a lost PubAck relies on
// the target stream's duplicate window having held the first publish, so
// the worker reads that stream afresh before it retries, not from the list
// of streams it keeps (here for an hour; the console's, 30 s): a stream
// deleted and made again since the first publish, or whose window was
// shortened so that it no longer covers it, is not published to again; the
// item needs a person, and says why.
func TestRetryJudgesTheStreamAsItIsNow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, b *replayBundle)
		want   string
		left   int // messages under the id in the target stream afterwards
	}{
		{"MadeAgain", func(t *testing.T, b *replayBundle) {
			require.NoError(t, b.js.DeleteStream(context.Background(), "APP"))
			b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})
		}, "deleted and made again, or a new stream for the subject), and its duplicate window never saw that publish", 0},
		{"WindowShortened", func(t *testing.T, b *replayBundle) {
			_, err := b.js.UpdateStream(context.Background(), jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: 100 * time.Millisecond})
			require.NoError(t, err)
		}, "duplicate window (100ms) no longer covers it", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			w := b.keptListWorker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
			msgID := "as-it-is-" + tc.name
			requestID, id := b.firstPublishLost(t, w, msgID)
			tc.change(t, b)

			j := b.settled(t, w, requestID, id)
			assert.Equal(t, "needs_reconciliation", j.State, j.Result)
			assert.Contains(t, j.Result, tc.want)
			assert.Equal(t, tc.left, b.publishedAs(t, msgID), "not published again")
		})
	}
}

// TestRetryStoredAsNewIsCheckedAgain: the target stream changes after the
// retry passed its last checks and before its publish; the broker stores the retry
// as a new message (its window never saw the first publish). A retry the
// broker did not drop means the first publish did not land, or the window
// no longer holds it: the worker reads the stream again after the PubAck,
// and since the stream there now was created after the first publish the
// item needs a person (it may have been applied twice), instead of
// showing replayed. The subject's new stream is either the old one made
// again or another stream that took the subject over; the retry is sent
// expecting the stream it was judged by, so another stream refuses it
// (nothing is stored again), and the item needs a person all the same.
func TestRetryStoredAsNewIsCheckedAgain(t *testing.T) {
	t.Parallel()
	stored := []string{"was published again and stored as", "its duplicate window never saw that publish"}
	for _, tc := range []struct {
		name   string
		change func(b *replayBundle) error // run by the worker as the retry leaves, after its checks
		stored int                         // copies of the retry the new stream holds
		want   []string
	}{
		{"MadeAgain", func(b *replayBundle) error {
			if err := b.js.DeleteStream(context.Background(), "APP"); err != nil {
				return err
			}
			s, err := b.js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})
			b.target = s
			return err
		}, 1, stored},
		{"SubjectMoved", func(b *replayBundle) error {
			if _, err := b.js.UpdateStream(context.Background(), jetstream.StreamConfig{Name: "APP", Subjects: []string{"retired.>"}}); err != nil {
				return err
			}
			s, err := b.js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "APP2", Subjects: []string{"app.>"}})
			b.target = s
			return err
		}, 0, []string{"was not published again", "expected stream does not match", "may have landed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			w := b.keptListWorker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
			msgID := "stored-as-new-" + tc.name
			requestID, id := b.firstPublishLost(t, w, msgID)
			var sends atomic.Int32
			w.Leaving(func(int64) { // after the checks as it leaves, which read the stream afresh
				if sends.Add(1) == 1 { // the retry, judged on the stream as it was
					if err := tc.change(b); err != nil {
						t.Errorf("change the stream: %v", err)
					}
				}
			})

			j := b.settled(t, w, requestID, id)
			require.Positive(t, sends.Load(), "the retry was sent") // more than once when the change made it late for its slot
			assert.Equal(t, tc.stored, b.publishedAs(t, msgID), "copies of the retry in the new stream")
			assert.Equal(t, "needs_reconciliation", j.State, j.Result)
			for _, want := range tc.want {
				assert.Contains(t, j.Result, want)
			}
		})
	}
}

// TestRetryAfterPurgeIsDroppedByTheWindow: a purge of the target stream
// removes its messages but not the ids of its duplicate window (until the
// broker restarts: docs/replay.md), so a retry after a lost PubAck is
// still dropped as a duplicate, and not stored again. The kept message is
// gone, so nothing shows whose it was (anything published under the id
// since may have been: TestRevReplay7UnreadableKeptMessageOnRetryIsNotProofOfOurs):
// the item needs a person, not "replayed" on an assumption.
func TestRetryAfterPurgeIsDroppedByTheWindow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	w := b.keptListWorker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	msgID := "purged-1"
	requestID, id := b.firstPublishLost(t, w, msgID)
	require.NoError(t, b.target.Purge(context.Background()))

	j := b.settled(t, w, requestID, id)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "answered Duplicate for a retry after an unknown outcome")
	assert.Contains(t, j.Result, "could not be read back")
	assert.Equal(t, 0, b.publishedAs(t, msgID), "not stored again")
}

// TestRetryDroppedByAStreamMadeAgainIsReconciled: the target stream is
// made again after the claim judged a retry, and a message not this
// replay's under the same id is published into it before the retry: the
// broker drops the retry as a duplicate of that message. Within one
// stream that would mean the first publish was dropped too, and the item
// would be deferred and published once the window passed; but the first
// publish went to the stream before, so it may have landed and been
// applied: the item needs a person, and nothing is published again.
func TestRetryDroppedByAStreamMadeAgainIsReconciled(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	w := b.keptListWorker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	msgID := "dropped-by-new-1"
	requestID, id := b.firstPublishLost(t, w, msgID)
	var sends atomic.Int32
	w.Leaving(func(int64) { // after the checks as it leaves, which read the stream afresh
		if sends.Add(1) > 1 {
			return
		}
		if err := b.js.DeleteStream(ctx, "APP"); err != nil {
			t.Errorf("delete the stream: %v", err)
			return
		}
		s, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})
		if err != nil {
			t.Errorf("make the stream again: %v", err)
			return
		}
		b.target = s
		if _, err := b.js.Publish(ctx, "app.acme.search.index_update", []byte(`{"other":true}`), jetstream.WithMsgID(msgID)); err != nil {
			t.Errorf("publish under the id: %v", err)
		}
	})

	j := b.settled(t, w, requestID, id)
	require.Positive(t, sends.Load(), "the retry was sent")
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "as a duplicate of APP:1, which is not shown to be this replay's")
	assert.Contains(t, j.Result, "its duplicate window never saw that publish")
	assert.Equal(t, 1, b.publishedAs(t, msgID), "only the other message")
}
