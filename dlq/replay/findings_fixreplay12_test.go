package replay_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixReplay12CopiesAreFollowed: a subject's window is the longest of
// its stream's and of every stream that copies what it stores of the
// subject: through a sourcing stream's subject transform, a stream that
// sources that one with a filter on the transformed subject, and a mirror
// (which keeps everything) that a stream sources. A source whose filter
// does not take the subject, and a mirror's own window, do not count.
// Fresh (a retry's read, and a first attempt's Duplicate) has the copies
// too.
func TestFixReplay12CopiesAreFollowed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = time.Second
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	// AGG copies app.acme.> as agg.acme.> (1m); AGG2 sources AGG's
	// agg.acme.search.> (5m); OTHER sources APP's app.acme.other.> only
	// (10m); MIR mirrors APP (20m, but a mirror drops nothing); FROMMIR
	// sources MIR (3m).
	b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "APP",
		SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: "app.acme.>", Destination: "agg.acme.>"}}}}})
	b.createStream(t, jetstream.StreamConfig{Name: "AGG2", Duplicates: 5 * time.Minute, Sources: []*jetstream.StreamSource{{Name: "AGG", FilterSubject: "agg.acme.search.>"}}})
	b.createStream(t, jetstream.StreamConfig{Name: "OTHER", Duplicates: 10 * time.Minute, Sources: []*jetstream.StreamSource{{Name: "APP", FilterSubject: "app.acme.other.>"}}})
	b.createStream(t, jetstream.StreamConfig{Name: "MIR", Duplicates: 20 * time.Minute, Mirror: &jetstream.StreamSource{Name: "APP"}})
	b.createStream(t, jetstream.StreamConfig{Name: "FROMMIR", Duplicates: 3 * time.Minute, Sources: []*jetstream.StreamSource{{Name: "MIR"}}})

	windows := replay.NewStreamWindows(b.js, time.Second)
	for subject, want := range map[string]struct {
		by    string
		holds time.Duration
	}{
		"app.acme.search.index_update": {"AGG2", 5 * time.Minute},    // APP → AGG (transformed) → AGG2
		"app.acme.billing.charge":      {"FROMMIR", 3 * time.Minute}, // AGG2's filter does not take it; MIR → FROMMIR does
		"app.acme.other.thing":         {"OTHER", 10 * time.Minute},
	} {
		for name, w := range map[string]replaypolicy.Window{"Window": windows.Window(ctx, subject), "Fresh": windows.Fresh(ctx, subject)} {
			require.Empty(t, w.Unreadable)
			assert.Equal(t, "APP", w.Stream, "%s %s", name, subject)
			assert.Equal(t, time.Second, w.Duplicates, "%s %s: the target's own window (a retry's)", name, subject)
			now := time.Now() // after every copy was made: each holds an id for its window
			h := w.Holds(now, now)
			assert.Equal(t, want.by, h.By, "%s %s", name, subject)
			assert.Equal(t, want.holds, h.Duplicates, "%s %s", name, subject)
		}
	}

	// A first attempt waits for the copy's window, and says whose.
	w := windows.Window(ctx, "app.acme.search.index_update")
	stored := time.Now()
	v := replaypolicy.JudgeWindow(replaypolicy.Attempt{MsgID: "m", StoredBy: stored, Window: w, Margin: time.Second}, stored.Add(2*time.Second))
	require.Equal(t, replaypolicy.Defer, v.Outcome, v.Reason)
	assert.Equal(t, stored.Add(5*time.Minute+time.Second), v.Until)
	assert.Contains(t, v.Reason, "stream AGG2 copies the subject from stream APP")
}

// TestFixReplay12DuplicateOfAnotherWaitsForTheCopies: a first attempt the
// broker drops as a duplicate of a message not ours is deferred until that
// message's id has left every window that holds it, the copies' too.
func TestFixReplay12DuplicateOfAnotherWaitsForTheCopies(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	v := replaypolicy.JudgeAck(replaypolicy.Ack{MsgID: "m", Subject: "app.acme.x", Stream: "APP", Seq: 7, Duplicate: true, FirstAttempt: true,
		Kept:   replaypolicy.Kept{StoredAt: now.Add(-time.Second), Subject: "app.acme.x", StoresAs: "app.acme.x"},
		Window: replaypolicy.Window{Stream: "APP", Duplicates: 2 * time.Second, Copies: []replaypolicy.Copy{{Stream: "AGG", Duplicates: time.Hour}}}, Margin: time.Second}, now)
	require.Equal(t, replaypolicy.Defer, v.Outcome, v.Reason)
	assert.Equal(t, now.Add(-time.Second+time.Hour+time.Second), v.Until, v.Reason)
	assert.Contains(t, v.Reason, "stream AGG copies the subject from stream APP")
}

// TestFixReplay12RetryIsJudgedByTheTargetsOwnWindow: a retry after an
// unknown outcome goes only while the target's own window covers its
// first attempt, however long a copy's: past it the target would store
// the retry again (its own consumers would get it twice).
func TestFixReplay12RetryIsJudgedByTheTargetsOwnWindow(t *testing.T) {
	t.Parallel()
	first := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	v := replaypolicy.JudgeWindow(replaypolicy.Attempt{MsgID: "m", StoredBy: first.Add(-time.Hour), FirstAttemptAt: first,
		Window: replaypolicy.Window{Stream: "APP", Duplicates: 2 * time.Minute, Retention: "limits", Storage: "file", Copies: []replaypolicy.Copy{{Stream: "AGG", Duplicates: time.Hour}}},
		Margin: time.Second}, first.Add(3*time.Minute))
	assert.Equal(t, replaypolicy.Reconcile, v.Outcome, v.Reason)
}

// TestFixReplay12CrashedPublishReleasedStaysUnknown: a worker died after
// its gate marked a job attempted (its publish may have landed); the
// claim that takes it over is released before it publishes (the worker
// stops). The job is recorded unknown, not "to go".
func TestFixReplay12CrashedPublishReleasedStaysUnknown(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "doc-crashed-released", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	// As a worker that died after the send leaves it, its first attempt
	// sent to APP as it is.
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET state = 'claimed', fence = fence + 1, lease_owner = 'died',
        lease_until = now() - interval '1 second', first_attempt_at = now() - interval '1 second', handed_at = now() - interval '1 second',
        first_stream = 'APP', first_stream_created = $2, not_before = now() - interval '1 second' WHERE request_id = $1`, req.ID, b.target.CachedInfo().Created)
	require.NoError(t, err)

	stopping := b.worker(t, replay.WorkerConfig{Owner: "stopping", Retry: 50 * time.Millisecond})
	var stop context.CancelFunc
	stopping.AfterJudge(func() { stop() })
	wait.Until(t, "the crashed job to be claimed", time.Minute, func() bool {
		rctx, cancel := context.WithCancel(ctx)
		stop = cancel
		n, _ := stopping.RunOnce(rctx)
		cancel()
		return n == 1
	})
	p, err := b.replays.Progress(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"unknown": 1}, b.jobStates(t, req.ID), b.jobsText(t, req.ID))
	assert.Equal(t, 1, p.Unknown, "%+v", p)
	assert.Contains(t, b.jobsText(t, req.ID), replaypolicy.StillUnknown)
	// Its audit row in the same record (invariant 8): the dead letter's
	// trail says it may have been sent.
	rows := b.auditRowsOf(t, "replay.item.unknown", "dead_letter", strconv.FormatInt(id, 10))
	require.Len(t, rows, 1, "the release that left it unknown is audited once")
}

// TestFixReplay12CancelDuringLostPubAckNeedsAPerson: a cancel lands while
// a first attempt's PubAck is awaited, and the PubAck is lost: the
// publish may have landed, so the cancelled request's job needs
// reconciliation (not "unknown", retried for a request that publishes
// nothing more), and keeps its dead letter for the person who settles it.
func TestFixReplay12CancelDuringLostPubAckNeedsAPerson(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "doc-cancel-lost", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{})
	w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		require.NoError(t, b.replays.Cancel(ctx, req.ID, oncall, "wrong selection", quarantine.RequestMeta{}))
		return nil, context.DeadlineExceeded
	})
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"needs_reconciliation": 1}, b.jobStates(t, req.ID), b.jobsText(t, req.ID))
	d, err := b.store.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusNeedsReconciliation, d.Status)

	// A new selection of it is told the cancelled request holds it, in
	// words that fit a cancelled request.
	_, reqs := b.draft(t, oncall, id)
	why := skipReasonsOf(t, b.replays, reqs)[id]
	assert.Contains(t, why, "cancelled or stopped")
	assert.NotContains(t, why, "it has finished")
}
