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

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixLead14CopyBehindDefersUntilItCaughtUp: a stream made after the
// original that sources the target copies it only when it catches up
// with its source. AGG here is made after the original with a source
// that does not reach APP yet (a link to another JetStream, as one that
// is down): it holds nothing of the subject, so the worker defers and
// says why, never "replayed". When the link is mended AGG copies the
// original; the worker then waits AGG's window from when AGG stored it,
// not from AGG's creation, and the replay reaches AGG's consumers.
func TestFixLead14CopyBehindDefersUntilItCaughtUp(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = time.Second
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	orig := nats.NewMsg(subject)
	orig.Header.Set(jetstream.MsgIDHeader, "orig-behind-1")
	orig.Data = []byte(`{"doc":"sku-1"}`)
	_, err = b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	id := b.seedItem(t, "search.index_update", "orig-behind-1", nil, `{"doc":"sku-1"}`)

	// AGG is made after the original, its link to APP down.
	aggCfg := jetstream.StreamConfig{Name: "AGG", Duplicates: 2 * time.Second,
		Sources: []*jetstream.StreamSource{{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}}}
	agg := b.createStream(t, aggCfg)
	aggCount := func(subj string) int {
		info, err := agg.Info(ctx, jetstream.WithSubjectFilter(subj))
		require.NoError(t, err)
		return int(info.State.Subjects[subj])
	}

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	wait.Until(t, "the job to be deferred for AGG", 30*time.Second, func() bool {
		return strings.Contains(b.jobsText(t, req.ID), "stream AGG copies the subject from stream APP, and stream AGG has not copied any message of")
	})
	assert.Zero(t, b.jobStates(t, req.ID)[string(replay.JobReplayed)], "nothing is shown replayed while AGG has not copied the original")
	assert.Equal(t, 1, b.onSubject(t, subject), "nothing is published while AGG is behind")

	// The link is mended: AGG copies the original now.
	aggCfg.Sources = []*jetstream.StreamSource{{Name: "APP"}}
	_, err = b.js.UpdateStream(ctx, aggCfg)
	require.NoError(t, err)
	wait.Until(t, "AGG to copy the original", 30*time.Second, func() bool { return aggCount(subject) == 1 })
	copied, err := agg.GetLastMsgForSubject(ctx, subject)
	require.NoError(t, err)

	r := b.waitFinished(t, req.ID)
	require.Equal(t, 1, b.jobStates(t, req.ID)[string(replay.JobReplayed)], "%s: %s", r.Status, b.jobsText(t, req.ID))
	replayed, err := b.target.GetLastMsgForSubject(ctx, subject)
	require.NoError(t, err)
	assert.False(t, replayed.Time.Before(copied.Time.Add(2*time.Second)), "published %s after AGG copied the original, inside its 2 s window",
		replayed.Time.Sub(copied.Time))
	wait.Until(t, "AGG to copy the replay", 30*time.Second, func() bool { return aggCount(subject) == 2 })
}

// TestFixLead14LateCopyReadFromWhenItCopied: the window reader reads a
// copy made after the original from the broker: when it stored the
// subject's latest message it copied (Copied), at or after its creation.
func TestFixLead14LateCopyReadFromWhenItCopied(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	orig := nats.NewMsg(subject)
	orig.Header.Set(jetstream.MsgIDHeader, "orig-read-1")
	_, err := b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	storedBy := time.Now()
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "APP"}}})
	wait.Until(t, "AGG to copy the original", 30*time.Second, func() bool {
		_, err := agg.GetLastMsgForSubject(ctx, subject)
		return err == nil
	})
	copied, err := agg.GetLastMsgForSubject(ctx, subject)
	require.NoError(t, err)

	windows := replay.NewStreamWindows(b.js, time.Second)
	w := windows.Window(ctx, subject)
	require.Empty(t, w.Unreadable)
	require.Len(t, w.Copies, 1, "%+v", w.Copies)
	c := w.Copies[0]
	assert.Equal(t, "APP", c.From())
	assert.Equal(t, []replaypolicy.CopyHop{{Stream: "APP", Subject: subject}, {Stream: "AGG", Subject: subject}}, c.Path)
	require.True(t, c.Late(storedBy, 100*time.Millisecond), "AGG was made after the original: %s vs %s", c.Since, storedBy)

	read := windows.LateCopies(ctx, replayAttempt(storedBy, w))
	require.Empty(t, read.Unreadable)
	require.Len(t, read.Copies, 1)
	assert.Empty(t, read.Copies[0].Behind)
	assert.True(t, read.Copies[0].Copied.Equal(copied.Time), "Copied %s, AGG stored the copy at %s", read.Copies[0].Copied, copied.Time)
	assert.True(t, w.Copies[0].Copied.IsZero(), "the window read is not changed in place")
}

// replayAttempt is a first attempt of an original stored by storedBy,
// judged by w with the tests' margin.
func replayAttempt(storedBy time.Time, w replaypolicy.Window) replaypolicy.Attempt {
	return replaypolicy.Attempt{MsgID: "m", StoredBy: storedBy, DeadLetteredAt: storedBy, Window: w, Margin: 100 * time.Millisecond}
}

// TestFixLead14ChainBehindIsBehind: a copy made after the original is
// read along its whole path: FROMMIR sources MIR, a mirror of APP whose
// link is down. FROMMIR has copied everything MIR has (nothing), but MIR
// has not copied APP's original, so FROMMIR is behind: it would copy the
// original, and drop a replay, once the link is mended.
func TestFixLead14ChainBehindIsBehind(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	orig := nats.NewMsg(subject)
	orig.Header.Set(jetstream.MsgIDHeader, "orig-chain-1")
	_, err := b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	storedBy := time.Now()
	b.createStream(t, jetstream.StreamConfig{Name: "MIR", Mirror: &jetstream.StreamSource{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}})
	b.createStream(t, jetstream.StreamConfig{Name: "FROMMIR", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "MIR"}}})

	windows := replay.NewStreamWindows(b.js, time.Second)
	w := windows.Window(ctx, subject)
	require.Empty(t, w.Unreadable)
	require.Len(t, w.Copies, 1, "%+v", w.Copies)
	require.Equal(t, []replaypolicy.CopyHop{{Stream: "APP", Subject: subject}, {Stream: "MIR", Subject: subject, Mirror: true}, {Stream: "FROMMIR", Subject: subject}}, w.Copies[0].Path)

	read := windows.LateCopies(ctx, replayAttempt(storedBy, w))
	require.Empty(t, read.Unreadable)
	assert.True(t, strings.HasPrefix(read.Copies[0].Behind, `stream MIR has not copied any message of "app.acme.search.index_update" from stream APP yet, and its link to stream APP `),
		read.Copies[0].Behind)
	v := replaypolicy.JudgeWindow(replayAttempt(storedBy, read), time.Now().Add(time.Hour))
	assert.Equal(t, replaypolicy.Defer, v.Outcome, v.Reason)
	assert.Contains(t, v.Reason, "stream FROMMIR copies the subject from stream MIR, and stream MIR has not copied any message of")
}
