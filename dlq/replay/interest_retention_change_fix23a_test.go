package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestStreamTurnedInterestBlockedAndListReadAgain: the fix of
// TestRevBroker23StreamTurnedInterestShownReplayed. The worker's list of
// streams names APP a limits stream; within the list's 30 s APP is made an
// interest stream (updated, or deleted and made again so), no consumer of
// it taking the subject. The first attempt is acknowledged and not
// stored; the worker reads APP as it is now (once for the claim), finds
// it of interest retention, finds no message at the PubAck's sequence and
// no consumer of the subject: the item ends blocked (no-interest), its
// dead letter let go. The list, whose retention or creation time of APP
// is no longer so, answers no more: the next window is read afresh.
func TestStreamTurnedInterestBlockedAndListReadAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		turn func(t *testing.T, b *replayBundle)
	}{
		{"Updated", func(t *testing.T, b *replayBundle) {
			_, err := b.js.UpdateStream(context.Background(), jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: jetstream.InterestPolicy})
			require.NoError(t, err)
		}},
		{"MadeAgain", func(t *testing.T, b *replayBundle) {
			require.NoError(t, b.js.DeleteStream(context.Background(), "APP"))
			b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Retention: jetstream.InterestPolicy})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := context.Background()
			require.NoError(t, b.js.DeleteStream(ctx, "APP"))
			b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})

			windows := replay.NewStreamWindows(b.js, replay.DefaultWindowTTL)
			const subject = "app.acme.search.index_update"
			require.Equal(t, "limits", windows.Window(ctx, subject).Retention)
			tc.turn(t, b)

			id := b.seedItem(t, "search.index_update", "turned-interest-"+tc.name, nil, `{"doc":1}`)
			cfg := b.config(t)
			cfg.Windows = windows
			w := replay.NewWorker(replay.New(b.db.Pool, cfg), b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute}, b.log)
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)

			j := b.job(t, req.ID, id)
			assert.Equal(t, "blocked", j.State, j.Result)
			assert.Contains(t, j.Result, "none of them takes app.acme.search.index_update")
			assert.Contains(t, j.Result, "acknowledged the replay (APP:1) and dropped it")
			assert.Equal(t, "interest", windows.Window(ctx, subject).Retention, "the list that named APP a limits stream was read again")
		})
	}
}

// TestLimitsStreamAnswersCostOneStreamReadPerClaim: a first attempt a
// limits stream acknowledges as new is judged by the stream as it is now,
// read once for the claim, not once per message, and a stream that is
// still of limits retention costs no interest re-read (no consumer
// listed, no fresh window) and one message read back per subject (an
// account subject mapping within the stream: storedUnder): three items to
// one subject of APP in one claim cost one STREAM.INFO of APP and one
// MSG.GET besides their publishes, are replayed, and the list of streams
// still answers.
func TestLimitsStreamAnswersCostOneStreamReadPerClaim(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	windows := replay.NewStreamWindows(b.js, replay.DefaultWindowTTL)
	const subject = "app.acme.search.index_update"
	require.Equal(t, "limits", windows.Window(ctx, subject).Retention)

	var ids []int64
	for i := range 3 {
		ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprintf("limits-cost-%d", i), nil, `{"doc":1}`))
	}
	cfg := b.config(t)
	cfg.Windows = windows
	w := replay.NewWorker(replay.New(b.db.Pool, cfg), b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute}, b.log)
	req := b.request(t, ids, replay.SubmitInput{})
	calls := apiCallsBySubject(t, b.ns, func() {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
	})
	t.Logf("JetStream API calls of the claim: %v", calls)
	for _, id := range ids {
		j := b.job(t, req.ID, id)
		assert.Equal(t, "replayed", j.State, j.Result)
	}
	assert.Equal(t, map[string]int{"$JS.API.STREAM.INFO.APP": 1, "$JS.API.STREAM.MSG.GET.APP": 1}, calls, "one read of the answering stream and one message of the subject for the claim, nothing per message")
	assert.Empty(t, apiCallsBySubject(t, b.ns, func() { windows.Window(ctx, "app.acme.search.other") }), "the list, whose APP is as it was, still answers")
}

// TestAnsweringStreamUnreadableNeedsReconciliation: a first attempt a
// limits stream acknowledged as new, the stream not read again after the
// answer (here deleted between its PubAck and the worker's read), is not
// shown replayed on the list's word that it stores whatever it
// acknowledges: whether it turned to interest retention since is not
// known, and a person decides (window-unread).
func TestAnsweringStreamUnreadableNeedsReconciliation(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	windows := replay.NewStreamWindows(b.js, replay.DefaultWindowTTL)
	require.Equal(t, "limits", windows.Window(ctx, "app.acme.search.index_update").Retention)

	id := b.seedItem(t, "search.index_update", "answer-unread", nil, `{"doc":1}`)
	cfg := b.config(t)
	cfg.Windows = windows
	w := replay.NewWorker(replay.New(b.db.Pool, cfg), b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute}, b.log)
	w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		require.NoError(t, b.js.DeleteStream(ctx, "APP"))
		return a, err
	})
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)

	j := b.job(t, req.ID, id)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "the stream could not be read again to tell whether it stored it")
}

// apiCallsBySubject counts the JetStream API requests made while f runs
// on ns, by subject.
func apiCallsBySubject(t *testing.T, ns *natstest.Server, f func()) map[string]int {
	t.Helper()
	watch, _ := ns.Connect(t)
	sub, err := watch.SubscribeSync("$JS.API.>")
	require.NoError(t, err)
	done, err := watch.SubscribeSync("probe.done")
	require.NoError(t, err)
	require.NoError(t, watch.Flush())
	f()
	nc, _ := ns.Connect(t)
	require.NoError(t, nc.Publish("probe.done", nil))
	_, err = done.NextMsg(10 * time.Second)
	require.NoError(t, err)
	calls := map[string]int{}
	for {
		m, err := sub.NextMsg(0)
		if err != nil {
			return calls
		}
		if !strings.HasPrefix(m.Subject, "$JS.API.") {
			continue
		}
		calls[m.Subject]++
	}
}
