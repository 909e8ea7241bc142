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
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevClock18FastWorkerPublishesInsideACopysWindow (review revclock18):
// a dead letter whose NATS server's clock was reset is kept under its
// arrival day's midnight (FlagImplausibleStoredAt), and a replay's first
// attempt waits for the windows of the streams that copy its target
// counted from when the console stored it (received_at, dated by the
// database: DEFAULT now(); dlq.DeadLetteredBy). The worker judges that
// wait (Worker.judge: replaypolicy.JudgeWindow(a, Config.Now())) on its
// own clock, and the publish gate never judges a first attempt's window
// again. A worker whose clock runs three hours ahead of the database's
// publishes the replay at once, inside AGG's two-hour window: AGG, which
// the consumers read, drops it as a duplicate of the original's id, and
// the console shows it replayed. A worker whose clock is right defers it.
func TestRevClock18FastWorkerPublishesInsideACopysWindow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = time.Second // the target's own window is over at once
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Sources: []*jetstream.StreamSource{{Name: "APP"}}, Duplicates: 2 * time.Hour})
	// The original, as its producer published it; AGG sourced it.
	orig := nats.NewMsg(subject)
	orig.Header.Set(jetstream.MsgIDHeader, "revclock18-copy-window")
	orig.Data = []byte(`{"doc":"sku-18"}`)
	ack, err := b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	stored, err := b.target.GetMsg(ctx, ack.Sequence)
	require.NoError(t, err)
	wait.Until(t, "AGG to source the original", 30*time.Second, func() bool {
		info, err := agg.Info(ctx, jetstream.WithSubjectFilter(subject))
		require.NoError(t, err)
		return info.State.Subjects[subject] == 1
	})

	id := b.seedItem(t, "search.index_update", "revclock18-copy-window",
		nats.Header{dlq.HeaderFirstFailedAt: {time.Now().UTC().Format(time.RFC3339Nano)}}, `{"doc":"sku-18"}`)
	// Its NATS server's clock was reset: the row is kept under its
	// arrival day's midnight, and stored (received_at) at the database's
	// now().
	_, err = b.db.OwnerPool.Exec(ctx, `UPDATE dead_letters SET flags = array_append(flags, $2),
            dead_lettered_at = date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', received_at = now()
        WHERE id = $1`, id, dlq.FlagImplausibleStoredAt)
	require.NoError(t, err)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	// APP's own one-second window for the original's id passes (by the
	// NATS server's clock, which stored it): a publish the worker lets go
	// lands in APP, where the test sees it.
	wait.Until(t, "APP's duplicate window for the original's id to pass", 10*time.Second, func() bool {
		return time.Since(stored.Time) > cfg.Duplicates+100*time.Millisecond
	})

	// The worker's host clock runs three hours ahead of the database's.
	fast := time.Now().Add(3 * time.Hour)
	b.now.Store(&fast)
	n, err := b.worker(t, replay.WorkerConfig{}).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the job is due")
	j := b.job(t, req.ID, id)
	assert.Equal(t, 1, b.onSubject(t, subject),
		"a worker 3 h ahead published the replay minutes after the dead letter was stored by the database's clock, inside AGG's 2 h duplicate window: job %s (%s)",
		j.State, j.Result)
	assert.Equal(t, string(replay.JobDeferred), j.State, j.Result)
}
