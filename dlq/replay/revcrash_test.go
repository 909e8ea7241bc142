package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestStoredPublishNotRecordedInTheLeaseKeepsItsPubAck (review rev-crash):
// the broker stores a publish and the worker holds its PubAck (stream and
// sequence), but PostgreSQL does not take the record within the lease (a
// failover, a lock: here a lock on the job's row) and the worker gives up,
// forgetting the PubAck; nobody else could have taken the job over, as
// the claim is in the same unreachable database. When the database
// answers again after the target's duplicate window, the next claim
// judges the job as "the publish got no answer" and ends it
// needs_reconciliation: a person must check by hand what the worker knew
// for certain, and the item's text is false (a PubAck came). A bulk
// replay caught by a PostgreSQL failover longer than the window gives one
// such task per item. The worker should go on recording under its
// fencing token (which only a claim, in that same database, moves on), or
// at least keep what the broker answered.
func TestStoredPublishNotRecordedInTheLeaseKeepsItsPubAck(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = 1500 * time.Millisecond
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	msgID := "acked-not-recorded"
	id := b.seedItem(t, "search.index_update", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	// The first record gives up at the lease's end, whatever RecordTimeout
	// is; once the lock is gone, a loaded machine needs more than 100 ms
	// for an attempt (a record kept failing at 100 ms at load 20).
	w := b.worker(t, replay.WorkerConfig{Lease: time.Second, RecordTimeout: time.Second, Retry: 20 * time.Millisecond})
	var lock pgx.Tx
	w.AfterPublish(func([]int64) bool {
		tx, err := b.db.Pool.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SELECT 1 FROM replay_jobs WHERE request_id = $1 FOR UPDATE`, req.ID)
		require.NoError(t, err)
		lock = tx
		return true
	})
	_, err = w.RunOnce(ctx)
	require.Error(t, err, "the record gave up at the lease's end")
	require.Equal(t, 1, b.publishedAs(t, msgID), "the broker stored the publish and answered it")
	w.AfterPublish(nil)
	// The database answers again only once the window no longer covers
	// the publish.
	published := b.published(t)[msgID]
	wait.Until(t, "the window past the publish", time.Minute, func() bool {
		return time.Since(published.Time) > cfg.Duplicates+time.Second
	})
	require.NoError(t, lock.Rollback(ctx))

	wait.Until(t, "the job settled", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		s := b.job(t, req.ID, id).State
		return s != "claimed" && s != "unknown" && s != "pending"
	})
	j := b.job(t, req.ID, id)
	assert.Equal(t, 1, b.publishedAs(t, msgID))
	assert.Equal(t, "replayed", j.State, "the broker stored it and said so (PubAck APP:%d); shown as %s: %s",
		published.Sequence, j.State, j.Result)
	assert.NotContains(t, j.Result, "no answer on record", "a PubAck came")
}

// TestOneSlowPubAckDoesNotLoseTheOthers (review rev-crash): judgeAcks
// (publish.go) waits AckTimeout for the PubAcks of a claim; when one
// times out it resets the timer to 0 "the rest are out of time too".
// But the rest's PubAcks have mostly arrived already: each of their
// selects then has two ready cases, the PubAck and the fired timer, and
// Go picks one at random. About half the jobs whose PubAck the broker
// sent are judged "no PubAck": unknown (a retry, and past the window a
// person), or at once needs_reconciliation on a target whose window is
// volatile. Here one item's target is a plain subscriber that never
// answers; the other 20 go to APP, which stores them and answers.
func TestOneSlowPubAckDoesNotLoseTheOthers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		retention jetstream.RetentionPolicy
	}{
		{"LimitsTarget", jetstream.LimitsPolicy},       // judged unknown: retried, or a person past the window
		{"WorkQueueTarget", jetstream.WorkQueuePolicy}, // judged needs_reconciliation at once
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			oneSlowPubAck(t, tc.retention)
		})
	}
}

func oneSlowPubAck(t *testing.T, retention jetstream.RetentionPolicy) {
	b := setupReplay(t)
	ctx := context.Background()
	if retention != jetstream.LimitsPolicy {
		require.NoError(t, b.js.DeleteStream(ctx, "APP"))
		b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: retention})
	}
	sub, err := b.nc.SubscribeSync("events.acme.search.index_update") // takes the publish, never answers
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, b.nc.Flush())
	ids := []int64{b.seedItem(t, "search.index_update", "slow-ack", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, "{}")}
	for i := range 20 {
		ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprintf("fast-ack-%d", i), nil, "{}"))
	}
	req := b.request(t, ids, replay.SubmitInput{})
	// The jobs are scheduled at the request's rate (1/rate apart from its
	// approval): the one claim below must find all 21 due, or it takes only
	// those whose time came and the rest are never published in it.
	wait.Until(t, "every job of the request due", time.Minute, func() bool {
		var due bool
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT bool_and(not_before <= now()) FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&due))
		return due
	})
	w := b.worker(t, replay.WorkerConfig{AckTimeout: 500 * time.Millisecond})
	var order []int64
	w.BeforeSend(func(jobID int64, _ time.Time) { order = append(order, jobID) })
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	var slow int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT id FROM replay_jobs WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, ids[0]).Scan(&slow))
	require.Equal(t, slow, order[0], "the slow one is published, and waited for, first")
	assert.Equal(t, "unknown", b.job(t, req.ID, ids[0]).State)
	var lost []string
	for i, id := range ids[1:] {
		j := b.job(t, req.ID, id)
		require.Equal(t, 1, b.publishedAs(t, fmt.Sprintf("fast-ack-%d", i)), "APP stored it")
		if j.State != "replayed" {
			lost = append(lost, fmt.Sprintf("fast-ack-%d: %s (%s)", i, j.State, j.Result))
		}
	}
	assert.Empty(t, lost, "PubAcks that arrived are judged lost after one slow PubAck timed out")
}

// TestRetryIntoRecreatedStreamIsNotReplayed (review rev-crash): a first
// publish the broker stored loses its PubAck (the job is unknown); a
// consumer of the target stream may have applied it. The target stream is
// then deleted and made again with the same configuration (an operator
// "fixing" a stream, a restore): its duplicate window no longer remembers
// the first publish. The retry is stored again as a new message and the
// item is shown "replayed" — a second effect outside the only duplicate
// window that covered the first attempt. The stream's creation time (in
// its info) is after the first attempt: the worker must not retry blind;
// the item needs a person (needs_reconciliation), as after a purge or a
// volatile stream.
func TestRetryIntoRecreatedStreamIsNotReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "recreated-1"
	id := b.seedItem(t, "search.index_update", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)
	j := b.job(t, req.ID, id)
	require.Equal(t, "unknown", j.State, j.Result)
	require.Contains(t, b.published(t), msgID, "the broker stored the first publish (a consumer may have applied it)")

	cfg := jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}}
	require.NoError(t, b.js.DeleteStream(ctx, "APP"))
	b.target = b.createStream(t, cfg)

	wait.Until(t, "the retry", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, req.ID, id).State != "unknown"
	})
	j = b.job(t, req.ID, id)
	assert.Equal(t, 0, b.publishedAs(t, msgID), "nothing republished into a stream whose window never saw the first attempt")
	assert.Equal(t, "needs_reconciliation", j.State, "shown as %s: %s", j.State, j.Result)
}
