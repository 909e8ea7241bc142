package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// judged runs w until every job of request req is decided (no longer
// pending, claimed, deferred or unknown).
func (b *replayBundle) judged(t *testing.T, w *replay.Worker, req int64, ids ...int64) {
	t.Helper()
	wait.Until(t, "the jobs judged", time.Minute, func() bool {
		_, err := w.RunOnce(context.Background())
		require.NoError(t, err)
		for _, id := range ids {
			switch b.job(t, req, id).State {
			case "pending", "claimed", "deferred", "unknown":
				return false
			}
		}
		return true
	})
}

// TestRev39MappedReplayConsumedBeforeItsReadBackNeedsAPerson: the account
// maps the original subject to another subject of the same work-queue
// stream, and a consumer of that other subject takes and acknowledges
// the replay before the worker reads it back. The read-back finds nothing
// at the PubAck's sequence, which says nothing about the subject it was
// stored under, and no other publish of the subject in the claim was read
// back on it: the job waits for a person. Before, "not there" counted as
// "stored on the original subject" and the job was shown replayed, though
// no consumer of that subject ever got it.
func TestRev39MappedReplayConsumedBeforeItsReadBackNeedsAPerson(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.js.DeleteStream(ctx, "APP"))
	b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: jetstream.WorkQueuePolicy})
	id := b.seedItem(t, "search.index_update", "rev39-wq-mapped", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	var subject string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT DISTINCT subject FROM replay_items WHERE request_id = $1`, req.ID).Scan(&subject))
	require.NoError(t, b.ns.GlobalAccount().AddMapping(subject, "app.acme.elsewhere"))
	cons, err := b.target.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "ELSEWHERE", FilterSubject: "app.acme.elsewhere", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	// Past any duplicate window of the dead letter: the first attempt goes.
	now := time.Now().Add(time.Hour)
	b.now.Store(&now)

	w := b.worker(t, replay.WorkerConfig{})
	consumed := 0
	w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		// The consumer of the mapped subject takes it between the PubAck
		// and the read-back.
		batch, ferr := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
		require.NoError(t, ferr)
		for m := range batch.Messages() {
			require.Equal(t, "app.acme.elsewhere", m.Subject())
			require.NoError(t, m.DoubleAck(ctx))
			consumed++
		}
		return a, err
	})
	b.judged(t, w, req.ID, id)
	require.Equal(t, 1, consumed, "the consumer of the mapped subject took the replay")
	j := b.job(t, req.ID, id)
	require.Equal(t, "needs_reconciliation", j.State, j.Result)
	require.Contains(t, j.Result, "could not be read back for the subject it was stored under")
}

// TestRev39ReplayRemovedBeforeItsReadBackIsJudgedByAnotherOfItsSubject:
// a stream that keeps one message per subject stores two replays of one
// subject in one claim, and the second removes the first before it is
// read back. The second is read back for both: on the original subject it
// shows that no mapping sends the subject elsewhere, and both are
// replayed; under a mapped subject it shows that one does, and both wait
// for a person. Before, the first's "not there" counted as "stored on the
// original subject", and was kept for the claim: under a mapping both
// were shown replayed, though no consumer of the subject got either.
func TestRev39ReplayRemovedBeforeItsReadBackIsJudgedByAnotherOfItsSubject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mapped bool
		want   string
	}{
		{"NoMapping", false, "replayed"},
		{"MappedElsewhere", true, "needs_reconciliation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := context.Background()
			require.NoError(t, b.js.DeleteStream(ctx, "APP"))
			b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, MaxMsgsPerSubject: 1})
			var ids []int64
			for i := range 2 {
				ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprintf("rev39-removed-%s-%d", tc.name, i), nil, "{}"))
			}
			req := b.request(t, ids, replay.SubmitInput{})
			var subject string
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT DISTINCT subject FROM replay_items WHERE request_id = $1`, req.ID).Scan(&subject))
			if tc.mapped {
				require.NoError(t, b.ns.GlobalAccount().AddMapping(subject, "app.acme.elsewhere"))
			}
			// One claim must publish both: both due before it runs.
			wait.Until(t, "both jobs due", time.Minute, func() bool {
				var due bool
				require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT bool_and(not_before <= now()) FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&due))
				return due
			})
			now := time.Now().Add(time.Hour)
			b.now.Store(&now)
			_, err := b.worker(t, replay.WorkerConfig{}).RunOnce(ctx)
			require.NoError(t, err)
			info, err := b.target.Info(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 2, info.State.LastSeq, "both were stored")
			require.EqualValues(t, 1, info.State.Msgs, "the second removed the first")
			for _, id := range ids {
				j := b.job(t, req.ID, id)
				require.Equal(t, tc.want, j.State, j.Result)
				if tc.mapped {
					require.Contains(t, j.Result, `under subject "app.acme.elsewhere"`)
				}
			}
		})
	}
}
