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

// TestRevReplay15RecreatedLateCopyShownReplayed: AGG, made after the
// original, copies the target through a link that is down, then comes
// up: the worker reads that AGG copied the original and defers the job
// until AGG's window has passed since. Meanwhile AGG is deleted and made
// again (its link down again): the new AGG has copied nothing. The
// worker remembers the first AGG's read by message id and path, which
// names AGG but not which AGG: it never reads the new one, counts its
// window from its creation, and publishes. When the new AGG's link comes
// back it copies the original, then the replay inside its window, and
// drops the replay: the item is shown replayed, AGG's consumers never
// get it.
func TestRevReplay15RecreatedLateCopyShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := rr14Original(t, b, "orig-recreated-1")
	down := jetstream.StreamConfig{Name: "AGG", Duplicates: 6 * time.Second,
		Sources: []*jetstream.StreamSource{{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}}}
	up := down
	up.Sources = []*jetstream.StreamSource{{Name: "APP"}}
	agg := b.createStream(t, down)

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	wait.Until(t, "the job to be deferred while AGG is behind", 30*time.Second, func() bool {
		return strings.Contains(b.jobsText(t, req.ID), "has not copied any message of")
	})
	_, err := b.js.UpdateStream(ctx, up) // its link is mended
	require.NoError(t, err)
	wait.Until(t, "AGG to copy the original", 30*time.Second, func() bool { return rr14Count(t, agg) == 1 })
	wait.Until(t, "the job to be deferred for AGG's window, counted from when it copied the original", 30*time.Second, func() bool {
		text := b.jobsText(t, req.ID)
		return strings.Contains(text, "deferred until") && strings.Contains(text, "stream AGG drops")
	})
	require.Zero(t, b.jobStates(t, req.ID)[string(replay.JobReplayed)], "replayed inside AGG's window: %s", b.jobsText(t, req.ID))

	// AGG is deleted and made again, its link down: the new AGG has not
	// copied the original.
	require.NoError(t, b.js.DeleteStream(ctx, "AGG"))
	agg = b.createStream(t, down)
	wait.Until(t, "the job to be replayed, or deferred while the new AGG is behind", 60*time.Second, func() bool {
		return b.jobStates(t, req.ID)[string(replay.JobReplayed)] == 1 || strings.Contains(b.jobsText(t, req.ID), "has not copied any message of")
	})
	assert.Zero(t, b.jobStates(t, req.ID)[string(replay.JobReplayed)],
		"shown replayed while AGG, made again since the read that showed the old AGG held the original, has not copied it (AGG holds %d messages of the subject): %s",
		rr14Count(t, agg), b.jobsText(t, req.ID))

	_, err = b.js.UpdateStream(ctx, up)
	require.NoError(t, err)
	r := b.waitFinished(t, req.ID)
	require.Equal(t, 1, b.jobStates(t, req.ID)[string(replay.JobReplayed)], "%s: %s", r.Status, b.jobsText(t, req.ID))
	wait.For(t, "the replay to reach AGG", 30*time.Second, func() error {
		if n := rr14Count(t, agg); n != 2 {
			return fmt.Errorf("the item is shown replayed, but AGG holds %d messages of the subject (APP %d): AGG dropped the replay as a duplicate of the original",
				n, b.onSubject(t, rr14Subject))
		}
		return nil
	})
}

// TestRevReplay15LateReadsForgottenMoveLater: AGG, made after the
// original, copied it at once, and a read shows so (Copied: when AGG
// stored it). The subject is in use: another message follows. Then the
// other items of a bulk replay of the subject, 10,000 of them, are read
// as the worker and the confirm page read them. StreamWindows keeps the
// reads of at most 10,000 message ids and then forgets them all at once
// (bounded): the first item is read again from the start, and its
// Copied is now when AGG stored the later message. Each item is read
// again when the window counted from its last read has passed, so with
// more than 10,000 such items in flight every one of them is forgotten
// before then, its wait moves later at each judgement, and none ever
// goes while the subject is in use (nor, whatever the subject does,
// when a copy is shown to hold the original by its source entry, read
// at the time of the read), each deferral with an audit row of its own
// (the time in its reason moved).
func TestRevReplay15LateReadsForgottenMoveLater(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	publish := func(msgID string) {
		m := nats.NewMsg(rr14Subject)
		m.Header.Set(jetstream.MsgIDHeader, msgID)
		_, err := b.js.PublishMsg(ctx, m)
		require.NoError(t, err)
	}
	publish("orig-many-1")
	storedBy := time.Now()
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "APP"}}})
	wait.Until(t, "AGG to copy the original", 30*time.Second, func() bool { return rr14Count(t, agg) == 1 })

	windows := replay.NewStreamWindows(b.js, time.Hour)
	w := windows.Window(ctx, rr14Subject)
	require.Len(t, w.Copies, 1, "%+v", w.Copies)
	a := replayAttempt(storedBy, w)
	read := windows.LateCopies(ctx, a)
	require.Empty(t, read.Unreadable)
	first := read.Copies[0].Copied
	require.False(t, first.IsZero(), "AGG holds the original: %+v", read.Copies[0])

	publish("later-1")
	wait.Until(t, "AGG to copy the later message", 30*time.Second, func() bool { return rr14Count(t, agg) == 2 })
	for i := range 10_000 {
		other := a
		other.MsgID = fmt.Sprintf("other-%d", i)
		require.Empty(t, windows.LateCopies(ctx, other).Unreadable)
	}
	// A stream's read serves a second: the next is of the streams now.
	loopEnd := time.Now()
	wait.Until(t, "the reads of the streams to be older than they serve", 10*time.Second, func() bool { return time.Since(loopEnd) > 1100*time.Millisecond })
	again := windows.LateCopies(ctx, a)
	require.Empty(t, again.Unreadable)
	assert.True(t, again.Copies[0].Copied.Equal(first),
		"a read showed AGG held the original by %s; read again after 10,000 other items, it holds it by %s (the later message's): the earliest time shown was forgotten",
		first.Format(time.RFC3339Nano), again.Copies[0].Copied.Format(time.RFC3339Nano))
}
