package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevReplay13SubjectMovedMidReplayIsNotBlockedForGood: an operator
// moves the item's subjects from stream APP to a new stream APP2 (APP's
// subjects edited, APP2 created: the streams of one account cannot
// overlap, so this is how a stream is split or replaced) while a replay
// runs. The worker's list of streams (StreamWindows, kept up to 30 s,
// DefaultWindowTTL) still says APP, so the first attempt is sent
// expecting APP and the broker refuses it (JSStreamNotMatchErr, 10060).
// publishError files that as "refused": the item is BLOCKED for good,
// "can never be published as it is … resolve it by hand", its dead letter
// replay_failed and let go, though nothing about the message is wrong and
// the next claim, once the list is read again, would store it in APP2. A
// bulk replay running through such a move loses every item it publishes
// within the list's 30 s to a new request and new approvals. The account
// subject-mapping case the refusal was made for
// (TestRevBroker9PubAckFromAnotherStreamIsNotReplayed) is told apart by
// reading the subject's stream afresh (Fresh): when another stream than
// the one the publish expected takes the subject now, the streams changed
// since the list was read, and the item waits (Wait, read again) rather
// than fails; only when the fresh read still names the expected stream (a
// mapping sends it elsewhere) is it refused.
func TestRevReplay13SubjectMovedMidReplayIsNotBlockedForGood(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"

	// A console whose list of streams is kept as in production.
	cfg := b.config(t)
	windows := replay.NewStreamWindows(b.js, 0)
	cfg.Windows = windows
	svc := replay.New(b.db.Pool, cfg)

	id := b.seedItem(t, "search.index_update", "moved-1", nil, `{"doc":"sku-1"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	w := windows.Window(ctx, subject) // the console read its streams a moment ago
	require.Equal(t, "APP", w.Stream)

	// The move: APP gives up app.acme.>, APP2 takes it.
	appCfg := b.target.CachedInfo().Config
	appCfg.Subjects = []string{"app.other.>"}
	_, err := b.js.UpdateStream(ctx, appCfg)
	require.NoError(t, err)
	app2 := b.createStream(t, jetstream.StreamConfig{Name: "APP2", Subjects: []string{"app.acme.>"}})

	worker := replay.NewWorker(svc, b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute, Retry: 50 * time.Millisecond}, b.log)
	run(t, worker)
	wait.Until(t, "the item's first outcome", time.Minute, func() bool {
		j := b.job(t, req.ID, id)
		return j.Attempts > 0 && j.State != string(replay.JobClaimed)
	})
	j := b.job(t, req.ID, id)
	assert.NotEqual(t, string(replay.JobBlocked), j.State,
		"the item is blocked for good because the worker's list of streams was read before the subject moved to APP2 (%s); APP2 takes it now", j.Result)
	if j.State == string(replay.JobBlocked) {
		info, err := app2.Info(ctx)
		require.NoError(t, err)
		assert.Zero(t, info.State.Msgs, "nothing was stored anywhere: the refusal was the list's age, not the message")
	}
}
