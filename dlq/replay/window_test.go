package replay_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// apiCalls counts the JetStream API requests made on the server while f
// runs: a second connection sees every publish, and a marker published
// after f on the same connection as the requests tells when all have come.
func apiCalls(t *testing.T, ns *natstest.Server, f func()) int {
	t.Helper()
	watch, _ := ns.Connect(t)
	sub, err := watch.SubscribeSync(">")
	require.NoError(t, err)
	require.NoError(t, watch.Flush())
	f()
	nc, _ := ns.Connect(t)
	require.NoError(t, nc.Publish("probe.done", nil))
	n := 0
	for {
		m, err := sub.NextMsg(10 * time.Second)
		require.NoError(t, err)
		if m.Subject == "probe.done" {
			return n
		}
		if strings.HasPrefix(m.Subject, "$JS.API.") {
			n++
		}
	}
}

// TestStreamWindowsReadOneListForManySubjects: the windows of 2,000
// subjects of one stream cost one JetStream API call (the list of
// streams), not two per subject (which stream stores it, then that
// stream); a stream created since is found, and a subject no stream takes
// has no window.
func TestStreamWindowsReadOneListForManySubjects(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	ctx := context.Background()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: 3 * time.Minute})
	require.NoError(t, err)
	w := replay.NewStreamWindows(js, time.Hour)

	calls := apiCalls(t, ns, func() {
		for i := range 2000 {
			win := w.Window(ctx, fmt.Sprintf("app.acme.search.doc-%d", i))
			require.Empty(t, win.Unreadable)
			require.Equal(t, "APP", win.Stream)
			require.Equal(t, 3*time.Minute, win.Duplicates)
		}
	})
	assert.Equal(t, 1, calls, "API calls for 2,000 subjects of one stream")
	listed := time.Now() // after the list was read

	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.*.created"}, Duplicates: time.Minute})
	require.NoError(t, err)
	time.Sleep(time.Until(listed.Add(replay.ListRereadAfter))) // a subject no stream takes reads only a list this old again
	assert.Equal(t, "EVENTS", w.Window(ctx, "events.acme.created").Stream, "a stream created since the list was read")
	assert.Equal(t, replaypolicy.Window{}, w.Window(ctx, "events.acme.deleted"), "no stream takes it")
	assert.Equal(t, "APP", w.Window(ctx, "app.acme.search.doc-1").Stream)
}

// TestStreamWindowsConcurrentCallersShareOneRead: callers that need a
// list while one is read wait for that read and answer from it, rather
// than each reading its own (or queueing behind a lock for one each).
func TestStreamWindowsConcurrentCallersShareOneRead(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	ctx := context.Background()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: 3 * time.Minute})
	require.NoError(t, err)
	w := replay.NewStreamWindows(js, time.Hour)

	calls := apiCalls(t, ns, func() {
		var wg sync.WaitGroup
		streams := make([]string, 50)
		for i := range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				subject := fmt.Sprintf("app.acme.doc-%d", i)
				if i%2 == 1 {
					subject = fmt.Sprintf("rpc.acme.doc-%d", i)
				}
				streams[i] = w.Window(ctx, subject).Stream
			}()
		}
		wg.Wait()
		for i, st := range streams {
			if i%2 == 1 {
				assert.Empty(t, st, "no stream takes rpc.acme.doc-%d", i)
			} else {
				assert.Equal(t, "APP", st, "app.acme.doc-%d", i)
			}
		}
	})
	assert.Equal(t, 1, calls, "API calls for 50 callers asking at once")
}

// countingWindows answers every subject as unreadable, counting the asks.
type countingWindows struct{ asks atomic.Int64 }

func (c *countingWindows) Window(context.Context, string) replaypolicy.Window {
	c.asks.Add(1)
	return replaypolicy.Window{Unreadable: "nats: timeout"}
}

func (c *countingWindows) Fresh(ctx context.Context, subject string) replaypolicy.Window {
	return c.Window(ctx, subject)
}

func (c *countingWindows) LateCopies(_ context.Context, a replaypolicy.Attempt) replaypolicy.Window {
	return a.Window
}

func (c *countingWindows) Seen(*jetstream.StreamInfo) {}

// TestConfirmPageAsksADeadNATSOnce: a confirm page of items on 30
// subjects, with NATS not answering, asks for one window, not one per
// subject (each waits up to 2 s for its answer): every item then waits
// until a window can be read.
func TestConfirmPageAsksADeadNATSOnce(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	windows := &countingWindows{}
	cfg := b.config(t)
	cfg.Windows = windows
	svc := replay.New(b.db.Pool, cfg)
	letters := make([]testfactory.Letter, 30)
	for i := range letters {
		// No "nats-" in the ids: a replay never sends that text (broker-key-text).
		letters[i] = testfactory.Letter{ItemType: "search.index_update", MsgID: fmt.Sprintf("no-answer-%d", i),
			Subject: fmt.Sprintf("app.acme.search.doc-%d", i), Payload: []byte(`{}`)}
	}
	batch, _ := testfactory.Draft(t, svc, oncall, testfactory.DeadLetters(t, b.db.Pool, letters...)...)
	sel, err := svc.Selection(context.Background(), batch, oncall, 1000)
	require.NoError(t, err)
	require.Len(t, sel.Requests, 1)
	assert.Equal(t, 30, sel.Requests[0].Waits.Unread, "every item waits for a window that could not be read")
	assert.Equal(t, int64(1), windows.asks.Load(), "windows asked of a NATS that does not answer")
}

// TestStreamWindowsFreshReadsTheStreamNow: Fresh answers from the
// stream's info read now (one call when the stream the list names still
// takes the subject), never from the list kept: a stream deleted and made
// again since the list was read answers with its new creation time, and a
// subject another stream took over since answers with that stream.
func TestStreamWindowsFreshReadsTheStreamNow(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	ctx := context.Background()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: 3 * time.Minute})
	require.NoError(t, err)
	w := replay.NewStreamWindows(js, time.Hour)
	kept := w.Window(ctx, "app.acme.doc-1")
	require.Equal(t, "APP", kept.Stream)
	require.False(t, kept.Created.IsZero(), "the list says when each stream was created")

	require.NoError(t, js.DeleteStream(ctx, "APP"))
	again, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, kept, w.Window(ctx, "app.acme.doc-1"), "the list kept answers as it was read")
	var fresh replaypolicy.Window
	calls := apiCalls(t, ns, func() { fresh = w.Fresh(ctx, "app.acme.doc-1") })
	assert.Equal(t, 1, calls, "API calls for a fresh answer from the stream the list names")
	assert.Equal(t, "APP", fresh.Stream)
	assert.Equal(t, time.Minute, fresh.Duplicates)
	assert.True(t, fresh.Created.Equal(again.CachedInfo().Created), "the stream made again: created %s, want %s", fresh.Created, again.CachedInfo().Created)

	_, err = js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"retired.>"}, Duplicates: time.Minute})
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "APP2", Subjects: []string{"app.>"}, Duplicates: 2 * time.Minute})
	require.NoError(t, err)
	fresh = w.Fresh(ctx, "app.acme.doc-1")
	assert.Equal(t, "APP2", fresh.Stream, "the stream that took the subject over")
	assert.Equal(t, 2*time.Minute, fresh.Duplicates)
	require.NoError(t, js.DeleteStream(ctx, "APP2"))
	assert.Equal(t, replaypolicy.Window{}, w.Fresh(ctx, "app.acme.doc-1"), "no stream takes it now")
}
