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
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevBroker21ForwardedHeaderHidesMsgIDFromBroker (review 21a): a
// replay forwards every header of the original but Nats-*, Dlq-*,
// Status and Description, judged by the header's NAME, and sends the
// producer's correlation and operation ids as its own Dlq-* headers. The
// broker finds Nats-Msg-Id (and Nats-Expected-Stream) by scanning the
// header block for the key's bytes (nats-server v2.15.2,
// getHeaderKeyIndex): a copy of the key that does not start a line is
// skipped, but when the next copy starts within two bytes of the end of
// that one (the key twice in a row, "Nats-Msg-IdNats-Msg-Id"), the scan
// gives up (index < 2) and the broker sees no message id at all, so it
// keeps no duplicate check for the publish. nats.go writes headers in map
// order, so in most publishes the producer's header comes before the
// replay's Nats-Msg-Id. A worker that dies after publishing and a
// survivor that republishes the same id inside the window
// (TestWorkerDiesAfterPublishBeforeCommit) then leave TWO copies in the
// target stream, both reported replayed: a producer's header value turns
// off the broker dedupe the replay relies on (invariant 4). Fifty items
// per case make the header order's luck irrelevant. With a plain value
// in the same header, every item is stored once.
func TestRevBroker21ForwardedHeaderHidesMsgIDFromBroker(t *testing.T) {
	t.Parallel()
	const twice = "Nats-Msg-IdNats-Msg-Id"
	for name, letter := range map[string]func(msgID string) testfactory.Letter{
		"ForwardedHeaderValue": func(msgID string) testfactory.Letter {
			return testfactory.Letter{MsgID: msgID, CorrelationID: "corr-" + msgID, Headers: nats.Header{"X-Note": {twice}}}
		},
		"CorrelationID": func(msgID string) testfactory.Letter {
			return testfactory.Letter{MsgID: msgID, CorrelationID: twice}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := context.Background()
			const n = 50
			ids := make([]int64, n)
			msgIDs := make([]string, n)
			for i := range ids {
				msgIDs[i] = fmt.Sprintf("doc-hidden-%d", i)
				l := letter(msgIDs[i])
				l.ItemType, l.Payload = "search.index_update", []byte("{}")
				ids[i] = testfactory.DeadLetter(t, b.db.Pool, l)
			}
			req := b.request(t, ids, replay.SubmitInput{})
			_, err := b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now()`) // all due at once
			require.NoError(t, err)

			dying := b.worker(t, replay.WorkerConfig{Owner: "dying", Lease: time.Minute, Batch: n})
			dying.AfterPublish(func([]int64) bool { return false }) // published, then gone before recording
			got, err := dying.RunOnce(ctx)
			require.ErrorIs(t, err, replay.ErrStopped)
			require.Equal(t, n, got)
			for _, id := range msgIDs {
				require.Equal(t, 1, b.publishedAs(t, id))
			}

			b.leaseRunsOut(t, req.ID)
			run(t, b.worker(t, replay.WorkerConfig{Owner: "survivor", Batch: n}))
			b.waitFinished(t, req.ID)
			stored := 0
			for _, id := range msgIDs {
				if b.publishedAs(t, id) > 1 {
					stored++
				}
			}
			assert.Zero(t, stored, "items stored twice in the target stream under one Nats-Msg-Id inside its duplicate window (jobs: %s)", b.jobsText(t, req.ID))
		})
	}
}

// TestRevBroker21ForwardedHeaderLostPubAckStoredTwice (review 21a): the
// same producer header on the path of a lost PubAck
// (TestLostPubAckReconciled): the broker stored the first publish, its
// answer never came, and the retry "under the same id, inside the
// window" is stored again instead of answered Duplicate, so the target
// stream holds the item twice while the console says replayed once.
func TestRevBroker21ForwardedHeaderLostPubAckStoredTwice(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const n = 50
	ids := make([]int64, n)
	msgIDs := make([]string, n)
	for i := range ids {
		msgIDs[i] = fmt.Sprintf("doc-lost-hidden-%d", i)
		ids[i] = b.seedItem(t, "search.index_update", msgIDs[i], nats.Header{"X-Note": {"Nats-Msg-IdNats-Msg-Id"}}, "{}")
	}
	req := b.request(t, ids, replay.SubmitInput{})
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now()`) // all due at once
	require.NoError(t, err)
	w := b.worker(t, replay.WorkerConfig{Retry: 50 * time.Millisecond, Batch: n})
	lost := map[int64]bool{}
	w.OnAck(func(job int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		if !lost[job] {
			lost[job] = true
			return nil, context.DeadlineExceeded // the broker stored it; the ack never came
		}
		return a, err
	})
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"unknown": n}, b.jobStates(t, req.ID))
	wait.Until(t, "the retries", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.jobStates(t, req.ID)["replayed"] == n
	})
	stored := 0
	for _, id := range msgIDs {
		if b.publishedAs(t, id) > 1 {
			stored++
		}
	}
	assert.Zero(t, stored, "items stored twice in the target stream after a lost PubAck's retry under the same Nats-Msg-Id (jobs: %s)", b.jobsText(t, req.ID))
}
