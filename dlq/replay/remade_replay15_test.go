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

// TestFixReplay15MirrorMadeAgainOnPathIsReadAgain: FROMMIR copies the
// target through MIR, a mirror of it; both made after the original. A
// read shows both hold it. MIR is then deleted and made again with its
// link down: the new MIR has copied nothing, and FROMMIR will copy the
// original again through it. The same window (as a list read before the
// change still says: the same creation times) read again is behind,
// naming MIR, not "copied" from what the old MIR showed.
func TestFixReplay15MirrorMadeAgainOnPathIsReadAgain(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	orig := nats.NewMsg(subject)
	orig.Header.Set(jetstream.MsgIDHeader, "orig-remade-1")
	_, err := b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	storedBy := time.Now()
	b.createStream(t, jetstream.StreamConfig{Name: "MIR", Mirror: &jetstream.StreamSource{Name: "APP"}})
	fromMir := b.createStream(t, jetstream.StreamConfig{Name: "FROMMIR", Duplicates: time.Minute, Sources: []*jetstream.StreamSource{{Name: "MIR"}}})
	wait.Until(t, "FROMMIR to copy the original", 30*time.Second, func() bool {
		_, err := fromMir.GetLastMsgForSubject(ctx, subject)
		return err == nil
	})

	windows := replay.NewStreamWindows(b.js, time.Hour)
	w := windows.Window(ctx, subject)
	require.Empty(t, w.Unreadable)
	require.Len(t, w.Copies, 1, "%+v", w.Copies)
	require.Equal(t, []replaypolicy.CopyHop{{Stream: "APP", Subject: subject}, {Stream: "MIR", Subject: subject, Mirror: true}, {Stream: "FROMMIR", Subject: subject}}, w.Copies[0].Path)
	wait.Until(t, "a read to show FROMMIR holds the original", 30*time.Second, func() bool {
		read := windows.LateCopies(ctx, replayAttempt(storedBy, w))
		require.Empty(t, read.Unreadable)
		return !read.Copies[0].Copied.IsZero()
	})

	require.NoError(t, b.js.DeleteStream(ctx, "MIR"))
	b.createStream(t, jetstream.StreamConfig{Name: "MIR", Mirror: &jetstream.StreamSource{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}})
	var read replaypolicy.Window
	wait.Until(t, "the reads of the old MIR to be forgotten (a stream's read serves a second)", 30*time.Second, func() bool {
		read = windows.LateCopies(ctx, replayAttempt(storedBy, w))
		require.Empty(t, read.Unreadable)
		return read.Copies[0].Copied.IsZero()
	})
	assert.True(t, strings.HasPrefix(read.Copies[0].Behind, `stream MIR has not copied any message of "app.acme.search.index_update" from stream APP yet`), read.Copies[0].Behind)
	v := replaypolicy.JudgeWindow(replayAttempt(storedBy, read), time.Now().Add(time.Hour))
	assert.Equal(t, replaypolicy.Defer, v.Outcome, v.Reason)
}
