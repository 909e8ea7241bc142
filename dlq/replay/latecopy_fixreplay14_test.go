package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixReplay14SiblingsKeptThroughCovered: a copy is left out only when
// another copies the target through it with a window no shorter. SIB1
// and SIB2 source APP side by side (SIB2 made later, with a longer
// window): both are kept. MID is covered by DOWN, which sources MID with
// a longer window; MID2 is not covered by DOWN2, whose window is shorter.
func TestFixReplay14SiblingsKeptThroughCovered(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	b.createStream(t, jetstream.StreamConfig{Name: "SIB1", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "APP"}}})
	b.createStream(t, jetstream.StreamConfig{Name: "SIB2", Duplicates: 5 * time.Minute, Sources: []*jetstream.StreamSource{{Name: "APP"}}})
	b.createStream(t, jetstream.StreamConfig{Name: "MID", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "APP"}}, Subjects: []string{"mid.>"}})
	b.createStream(t, jetstream.StreamConfig{Name: "DOWN", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "MID"}}, Subjects: []string{"down.>"}})
	b.createStream(t, jetstream.StreamConfig{Name: "MID2", Duplicates: time.Hour, Sources: []*jetstream.StreamSource{{Name: "APP"}}, Subjects: []string{"mid2.>"}})
	b.createStream(t, jetstream.StreamConfig{Name: "DOWN2", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "MID2"}}, Subjects: []string{"down2.>"}})

	w := replay.NewStreamWindows(b.js, time.Second).Window(ctx, "app.acme.search.index_update")
	require.Empty(t, w.Unreadable)
	var names []string
	for _, c := range w.Copies {
		names = append(names, c.Stream)
	}
	assert.ElementsMatch(t, []string{"SIB1", "SIB2", "DOWN", "MID2", "DOWN2"}, names,
		"MID is read through DOWN (same window); siblings and MID2 (longer than DOWN2) are kept")
}

// TestFixReplay14LinkCaughtUpIsConfirmed: a late copy that holds nothing
// of the subject (its copy aged out) while the target does is judged by
// its source entry: caught up on a first read, which the link's count of
// what is left (one short) cannot prove alone, so it is behind until a
// later read hears from the link again; then it held the original by
// that read, and later reads keep that time.
func TestFixReplay14LinkCaughtUpIsConfirmed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	orig := nats.NewMsg(subject)
	orig.Header.Set(jetstream.MsgIDHeader, "orig-confirm-link-1")
	_, err := b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	storedBy := time.Now()
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Second, MaxAge: 1500 * time.Millisecond, Sources: []*jetstream.StreamSource{{Name: "APP"}}})
	wait.Until(t, "AGG to copy the original", 30*time.Second, func() bool { return rr14Count(t, agg) == 1 })
	wait.Until(t, "AGG's copy to age out", 30*time.Second, func() bool { return rr14Count(t, agg) == 0 })

	windows := replay.NewStreamWindows(b.js, time.Minute)
	w := windows.Window(ctx, subject)
	require.Len(t, w.Copies, 1)
	first := windows.LateCopies(ctx, replayAttempt(storedBy, w))
	require.Empty(t, first.Unreadable)
	assert.Zero(t, first.Copies[0].Copied)
	assert.Contains(t, first.Copies[0].Behind, "its link to stream APP says it has copied all of it, which the next read confirms")
	assert.False(t, first.Copies[0].BehindSince.IsZero())

	var copied time.Time
	wait.For(t, "a read to confirm AGG caught up", 20*time.Second, func() error {
		r := windows.LateCopies(ctx, replayAttempt(storedBy, w))
		if copied = r.Copies[0].Copied; copied.IsZero() {
			return fmt.Errorf("still %q", r.Copies[0].Behind)
		}
		return nil
	})
	time.Sleep(1100 * time.Millisecond) // past the reads kept
	again := windows.LateCopies(ctx, replayAttempt(storedBy, w))
	assert.True(t, again.Copies[0].Copied.Equal(copied), "a later read keeps the earliest time shown: %s, then %s", copied, again.Copies[0].Copied)
	assert.Empty(t, again.Copies[0].Behind)
}

// TestFixReplay14BusySubjectKeepsTheFirstCopiedTime: on a subject that
// keeps receiving messages, the copy's Copied stays the time the first
// read showed (each later read shows a later latest message), and the
// memory is by message id: another item's first read is its own.
func TestFixReplay14BusySubjectKeepsTheFirstCopiedTime(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	publish := func(id string) {
		m := nats.NewMsg(subject)
		m.Header.Set(jetstream.MsgIDHeader, id)
		_, err := b.js.PublishMsg(ctx, m)
		require.NoError(t, err)
	}
	publish("orig-busy-fix-1")
	storedBy := time.Now()
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "APP"}}})
	wait.Until(t, "AGG to copy the original", 30*time.Second, func() bool { return rr14Count(t, agg) == 1 })

	windows := replay.NewStreamWindows(b.js, time.Minute)
	w := windows.Window(ctx, subject)
	a := replayAttempt(storedBy, w)
	a.MsgID = "orig-busy-fix-1"
	first := windows.LateCopies(ctx, a).Copies[0]
	require.Empty(t, first.Behind)
	require.False(t, first.Copied.IsZero())

	publish("other-1")
	wait.Until(t, "AGG to copy the other message", 30*time.Second, func() bool { return rr14Count(t, agg) == 2 })
	time.Sleep(1100 * time.Millisecond) // past the reads kept
	again := windows.LateCopies(ctx, a).Copies[0]
	assert.True(t, again.Copied.Equal(first.Copied), "Copied moved from %s to %s", first.Copied, again.Copied)

	b2 := a
	b2.MsgID = "another-item"
	other := windows.LateCopies(ctx, b2).Copies[0]
	assert.True(t, other.Copied.After(first.Copied), "another message id is read afresh: %s vs %s", other.Copied, first.Copied)
}

// TestFixReplay14ChainThroughAgedOutStream: APP → MID → AGG, both made
// after the original; MID's copy aged out while AGG keeps its own. AGG's
// latest message was copied from MID's message of the original, but MID
// holds none now: MID is judged by its link to APP (caught up, confirmed
// on a second read), and AGG then by its link to MID, heard from after
// MID was shown to hold the original; never by stored times.
func TestFixReplay14ChainThroughAgedOutStream(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	orig := nats.NewMsg(subject)
	orig.Header.Set(jetstream.MsgIDHeader, "orig-chain-aged-1")
	_, err := b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	storedBy := time.Now()
	mid := b.createStream(t, jetstream.StreamConfig{Name: "MID", Duplicates: time.Second, MaxAge: time.Second, Sources: []*jetstream.StreamSource{{Name: "APP"}}, Subjects: []string{"mid.>"}})
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "MID"}}, Subjects: []string{"agg.>"}})
	wait.Until(t, "AGG to copy the original", 30*time.Second, func() bool { return rr14Count(t, agg) == 1 })
	wait.Until(t, "MID's copy to age out", 30*time.Second, func() bool { return rr14Count(t, mid) == 0 })

	windows := replay.NewStreamWindows(b.js, time.Minute)
	w := windows.Window(ctx, subject)
	require.Len(t, w.Copies, 1, "MID is read through AGG: %+v", w.Copies)
	first := windows.LateCopies(ctx, replayAttempt(storedBy, w)).Copies[0]
	assert.True(t, strings.HasPrefix(first.Behind, "stream MID has not copied any message of"), first.Behind)
	wait.For(t, "reads to show AGG holds the original", 30*time.Second, func() error {
		c := windows.LateCopies(ctx, replayAttempt(storedBy, w)).Copies[0]
		if c.Copied.IsZero() {
			return fmt.Errorf("still %q", c.Behind)
		}
		return nil
	})
}

// TestFixReplay14BehindDeferralAuditedOnceThenTheOutcome: an item
// deferred again and again for the same late copy behind gets one audit
// row for that deferral (its job's row says when it goes again); once the
// copy caught up, what became of it gets its own rows, in the same
// transaction as its state.
func TestFixReplay14BehindDeferralAuditedOnceThenTheOutcome(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := rr14Original(t, b, "orig-audit-fix-1")
	aggCfg := jetstream.StreamConfig{Name: "AGG", Duplicates: time.Second,
		Sources: []*jetstream.StreamSource{{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}}}
	agg := b.createStream(t, aggCfg)

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	run(t, b.worker(t, replay.WorkerConfig{}))
	wait.Until(t, "the job to be deferred for AGG", 30*time.Second, func() bool {
		return strings.Contains(b.jobsText(t, req.ID), "has not copied any message of")
	})
	rows := func(action string) (n int) {
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = $1 AND object_type = 'dead_letter' AND object_id = $2`,
			action, fmt.Sprint(id)).Scan(&n))
		return n
	}
	wait.Until(t, "the job to be judged again meanwhile (more than two claims)", 30*time.Second, func() bool {
		var claims int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT attempts FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&claims))
		return claims > 2
	})
	// One row per reason: the original's own window first, then AGG behind.
	var reasons, behind int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(DISTINCT reason), count(*) FILTER (WHERE reason LIKE '%has not copied any message of%')
        FROM audit_log WHERE action = 'replay.item.deferred' AND object_type = 'dead_letter' AND object_id = $1`, fmt.Sprint(id)).Scan(&reasons, &behind))
	assert.Equal(t, reasons, rows("replay.item.deferred"), "one row for one reason: %s", b.jobsText(t, req.ID))
	assert.Equal(t, 1, behind, "AGG behind, judged again and again: %s", b.jobsText(t, req.ID))

	aggCfg.Sources = []*jetstream.StreamSource{{Name: "APP"}}
	_, err := b.js.UpdateStream(ctx, aggCfg)
	require.NoError(t, err)
	r := b.waitFinished(t, req.ID)
	require.Equal(t, 1, b.jobStates(t, req.ID)[string(replay.JobReplayed)], "%s: %s", r.Status, b.jobsText(t, req.ID))
	assert.Equal(t, 1, rows("replay.item.replayed"))
	assert.GreaterOrEqual(t, rows("replay.item.deferred"), 1)
	wait.Until(t, "AGG to copy the replay", 30*time.Second, func() bool { return rr14Count(t, agg) == 2 })
}

// TestFixReplay14ConfirmPageNamesTheBehindCopy: the confirm page counts
// an item whose late copy is behind as waiting, names that copy, and
// gives no time (when it goes is not known), with the worker's reason.
func TestFixReplay14ConfirmPageNamesTheBehindCopy(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := rr14Original(t, b, "orig-confirm-fix-1")
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Second,
		Sources: []*jetstream.StreamSource{{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}}})
	past := agg.CachedInfo().Created.Add(1200 * time.Millisecond)
	wait.Until(t, "AGG's window as its creation says to pass", 30*time.Second, func() bool { return time.Now().After(past) })

	batch, _ := b.draft(t, oncall, id)
	sel, err := b.replays.Selection(ctx, batch, oncall, 1000)
	require.NoError(t, err)
	w := sel.Requests[0].Waits
	assert.Equal(t, 1, w.Items, "%+v", w)
	assert.Equal(t, 1, w.Behind, "%+v", w)
	assert.Equal(t, []string{"AGG"}, w.Streams)
	assert.True(t, w.Until.IsZero(), "no time is known while AGG is behind: %s", w.Until)
	assert.Contains(t, w.First, "stream AGG has not copied any message of")
}
