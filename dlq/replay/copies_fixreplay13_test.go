package replay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestFixReplay13CopiesSayWhenTheyBeganToCopy: a stream's copies carry
// when each can have begun to copy the target (the latest creation time
// along the way), and one another covers (made no earlier, window no
// shorter) is left out.
func TestFixReplay13CopiesSayWhenTheyBeganToCopy(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "APP"}},
		Subjects: []string{"agg.>"}})
	agg2 := b.createStream(t, jetstream.StreamConfig{Name: "AGG2", Duplicates: 5 * time.Minute, Sources: []*jetstream.StreamSource{{Name: "AGG"}},
		Subjects: []string{"agg2.>"}})
	// MIR mirrors APP after both; FROMMIR sources it with a short window.
	b.createStream(t, jetstream.StreamConfig{Name: "MIR", Duplicates: 20 * time.Minute, Mirror: &jetstream.StreamSource{Name: "APP"}})
	b.createStream(t, jetstream.StreamConfig{Name: "FROMMIR", Duplicates: 30 * time.Second, Sources: []*jetstream.StreamSource{{Name: "MIR"}}})
	mir, err := b.js.Stream(ctx, "MIR")
	require.NoError(t, err)

	w := replay.NewStreamWindows(b.js, time.Second).Window(ctx, "app.acme.search.index_update")
	require.Empty(t, w.Unreadable)
	byName := map[string]time.Time{}
	for _, c := range w.Copies {
		byName[c.Stream] = c.Since
	}
	assert.NotContains(t, byName, "AGG", "AGG2 was made after AGG and holds an id longer: AGG is covered (%+v)", w.Copies)
	assert.NotContains(t, byName, "MIR", "a mirror drops nothing")
	require.Contains(t, byName, "AGG2", "%+v", w.Copies)
	assert.True(t, byName["AGG2"].Equal(agg2.CachedInfo().Created), "AGG2 began to copy when it was made (after AGG: %s)", agg.CachedInfo().Created)
	require.Contains(t, byName, "FROMMIR", "made after AGG2, with a shorter window, it may hold an id later: %+v", w.Copies)
	assert.False(t, byName["FROMMIR"].Before(mir.CachedInfo().Created), "FROMMIR copies APP through MIR: not before MIR was made")
}

// TestFixReplay13ConfirmPageWaitsForTheCopyFromTheDeadLetter: the confirm
// page judges as the worker does: an item whose first failure is ten
// minutes old waits for the copy's window from when its dead letter was
// stored, and names the copy.
func TestFixReplay13ConfirmPageWaitsForTheCopyFromTheDeadLetter(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = time.Second
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	b.createStream(t, jetstream.StreamConfig{Name: "AGG", Sources: []*jetstream.StreamSource{{Name: "APP"}}, Duplicates: time.Hour})
	before := time.Now()
	batch, _ := b.draft(t, oncall, b.seedItem(t, "search.index_update", "confirm-copy-1", nil, `{}`)) // first failure ten minutes ago
	sel, err := b.replays.Selection(ctx, batch, oncall, 1000)
	require.NoError(t, err)
	require.Len(t, sel.Requests, 1)
	w := sel.Requests[0].Waits
	assert.Equal(t, 1, w.Items, "%+v", w)
	assert.Equal(t, []string{"AGG"}, w.Streams)
	assert.True(t, w.Until.After(before.Add(time.Hour-time.Minute)), "it waits an hour from now, not from ten minutes ago: %s", w.Until)
}

// TestFixReplay13MovedSubjectIsReplayedWhereItIsNow: the item whose
// subject moved to APP2 while the worker's list of streams (kept 30 s)
// still named APP is not blocked, and is replayed into APP2 well before
// the list would have aged out: the refusal's fresh read marks the list
// stale.
func TestFixReplay13MovedSubjectIsReplayedWhereItIsNow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	cfg := b.config(t)
	windows := replay.NewStreamWindows(b.js, 0)
	cfg.Windows = windows
	svc := replay.New(b.db.Pool, cfg)

	id := b.seedItem(t, "search.index_update", "moved-replayed-1", nil, `{"doc":"sku-1"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, "APP", windows.Window(ctx, subject).Stream)
	appCfg := b.target.CachedInfo().Config
	appCfg.Subjects = []string{"app.other.>"}
	_, err := b.js.UpdateStream(ctx, appCfg)
	require.NoError(t, err)
	app2 := b.createStream(t, jetstream.StreamConfig{Name: "APP2", Subjects: []string{"app.acme.>"}})

	started := time.Now()
	worker := replay.NewWorker(svc, b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute, Retry: 50 * time.Millisecond}, b.log)
	run(t, worker)
	b.waitFinished(t, req.ID)
	j := b.job(t, req.ID, id)
	require.Equal(t, string(replay.JobReplayed), j.State, j.Result)
	assert.Contains(t, j.Result, "stored as APP2:1")
	assert.Less(t, time.Since(started), replay.DefaultWindowTTL, "the item waited for the list of streams to age out")
	info, err := app2.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.State.Msgs)
}

// TestFixReplay13MappedSubjectIsStillRefused: when the subject's stream,
// read afresh after the broker's refusal, is still the one the publish
// expected, an account mapping sends it elsewhere: the item is blocked
// (it can never be published as it is), not retried for good.
func TestFixReplay13MappedSubjectIsStillRefused(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	subject := "app.acme.search.index_update"
	b.createStream(t, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}})
	id := b.seedItem(t, "search.index_update", "mapped-refused-1", nats.Header{dlq.HeaderOriginalSubject: {subject}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.NoError(t, b.ns.GlobalAccount().AddMapping(subject, "other.search"))
	run(t, b.worker(t, replay.WorkerConfig{Retry: 50 * time.Millisecond}))
	b.waitFinished(t, req.ID)
	j := b.job(t, req.ID, id)
	assert.Equal(t, string(replay.JobBlocked), j.State, j.Result)
	assert.True(t, strings.Contains(j.Result, "another stream than the one that stores the subject"), j.Result)
}

// TestFixReplay13HaltedUnsentSaysHeldNotPublished: a cancel lands while a
// worker holds a job it then releases unsent (the worker stops right
// before the send): the record ends it cancelled, saying the worker held
// it, not that it published it (nothing was sent in that claim).
func TestFixReplay13HaltedUnsentSaysHeldNotPublished(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "doc-halted-unsent", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{})
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	w.BeforeSend(func(int64, time.Time) {
		require.NoError(t, b.replays.Cancel(ctx, req.ID, oncall, "wrong selection", quarantine.RequestMeta{}))
		stop()
	})
	_, err := w.RunOnce(rctx)
	require.NoError(t, err)
	assert.Zero(t, b.onSubject(t, "app.acme.search.index_update"), "nothing was sent")
	j := b.job(t, req.ID, id)
	assert.Equal(t, string(replay.JobCancelled), j.State, j.Result)
	assert.Contains(t, j.Result, "while a worker held it (released: the worker is stopping)")
	assert.NotContains(t, j.Result, "published it")
}
