package dlq

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev38ForgedMessagesOnTheInboxAreNotTaken: a client that may publish
// on _INBOX.> and read the JetStream API subject learns the puller's inbox
// and sends it (1) a message with a reply of its own, and (2) a status as
// the server would send it, "409 Consumer Deleted". The first is dropped,
// not handed to the writers (stored, it would be a dead letter no stream
// held); the second makes the puller look again (gone) but retires
// nothing: whether the consumer is another one now is read from JetStream
// (retireReplaced). Before, (1) was stored as a dead letter of tenant
// unknown, and (2) retired the incarnation, leaving every message in
// flight unacked until its ack wait, each time it was sent.
func TestRev38ForgedMessagesOnTheInboxAreNotTaken(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	nc, js := ns.Connect(t)
	ctx := context.Background()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "REV38", Subjects: []string{"rev38.>"}})
	require.NoError(t, err)
	cons, err := js.CreateOrUpdateConsumer(ctx, "REV38", jetstream.ConsumerConfig{Durable: "rev38", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)

	attacker, _ := ns.Connect(t)
	api, err := attacker.SubscribeSync(jetstream.DefaultAPIPrefix + "CONSUMER.MSG.NEXT.REV38.rev38")
	require.NoError(t, err)
	require.NoError(t, attacker.Flush())

	var mu sync.Mutex
	var handled []jetstream.Msg
	var gone atomic.Int32
	inc := &incarnation{stream: "REV38", created: cons.CachedInfo().Created}
	stop, err := startPuller(nc, apiPrefix(js), "REV38", "rev38", inc, 10, 1<<20, func(m jetstream.Msg) {
		mu.Lock()
		handled = append(handled, m)
		mu.Unlock()
	}, func() { gone.Add(1) }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(stop)
	req, err := api.NextMsg(10 * time.Second)
	require.NoError(t, err)
	inbox := req.Reply

	// realNext publishes a real message to REV38 and requires it to be
	// the n-th the puller handled: whatever came to the inbox before it
	// was dropped (the callback takes messages in the order the server
	// routed them).
	realNext := func(data string, n int, why string) {
		t.Helper()
		_, err := js.Publish(ctx, "rev38."+data, []byte(data))
		require.NoError(t, err)
		wait.Until(t, "the real message "+data+" handled", 10*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(handled) >= n
		})
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, handled, n, why)
		require.Equal(t, data, string(handled[n-1].Data()))
	}

	// (1) A reply of its own, then a real message.
	require.NoError(t, attacker.PublishMsg(&nats.Msg{Subject: inbox, Reply: "_INBOX.attacker.1", Data: []byte("forged"),
		Header: nats.Header{HeaderItemType: {"payments.refund"}}}))
	realNext("real", 1, "only JetStream's delivery is handled")

	// (2) A push consumer of another stream delivering to the inbox: its
	// messages carry a real ack subject, of that stream and consumer (a
	// deliver subject is checked against no permission).
	_, ajs := ns.Connect(t)
	_, err = ajs.CreateStream(ctx, jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"evil.>"}})
	require.NoError(t, err)
	push, err := ajs.CreateOrUpdatePushConsumer(ctx, "EVIL", jetstream.ConsumerConfig{Durable: "evil", DeliverSubject: inbox, AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	_, err = ajs.Publish(ctx, "evil.x", []byte("pushed"))
	require.NoError(t, err)
	wait.Until(t, "the pushed message delivered", 10*time.Second, func() bool {
		info, err := push.Info(ctx)
		require.NoError(t, err)
		return info.Delivered.Consumer > 0
	})
	realNext("real2", 2, "a delivery of another stream's consumer is not handled")

	// (3) A status as the server sends it.
	require.NoError(t, attacker.PublishMsg(&nats.Msg{Subject: inbox, Header: nats.Header{"Status": {"409"}, "Description": {"Consumer Deleted"}}}))
	wait.Until(t, "the puller looks again", 10*time.Second, func() bool { return gone.Load() > 0 })
	require.False(t, inc.isRetired(), "a status on the inbox is not proof the consumer is gone: JetStream is asked (retireReplaced)")
	require.True(t, inc.wasSaidDeleted())
}

// TestRev38SaidDeletedAndUnreadableIsRetired: after a status said the
// consumer was deleted, a lookup that JetStream does not answer retires
// the incarnation (as the status alone did before round 38): the stream
// and consumer may be made again next, and an ack of the old one's
// message would settle the new one's of that sequence. One no status
// spoke of stays until a lookup answers.
func TestRev38SaidDeletedAndUnreadableIsRetired(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	nc, js := ns.Connect(t)
	nc.Close() // every lookup fails, answered by nobody
	in := (&bundle{js: js}).newIdle(IngestConfig{Durable: "rev38"}, nil)
	said, quiet := &incarnation{stream: "REV38"}, &incarnation{stream: "REV38B"}
	said.saidDeleted()
	sess := &session{stop: func() {}, incs: map[string]*incarnation{"REV38": said, "REV38B": quiet}}
	require.False(t, in.retireReplaced(context.Background(), sess))
	require.True(t, said.isRetired(), "said deleted, and not readable: retired")
	require.False(t, quiet.isRetired(), "not readable alone: neither retired nor unchanged")

	// A lookup that found the consumer the same answers the status: a
	// lookup that fails hours later does not retire it on that word.
	nc2, js2 := ns.Connect(t)
	ctx := context.Background()
	_, err := js2.CreateStream(ctx, jetstream.StreamConfig{Name: "REV38C", Subjects: []string{"rev38c.>"}})
	require.NoError(t, err)
	cons, err := js2.CreateOrUpdateConsumer(ctx, "REV38C", jetstream.ConsumerConfig{Durable: "rev38", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	in2 := (&bundle{js: js2}).newIdle(IngestConfig{Durable: "rev38"}, nil)
	answered := &incarnation{stream: "REV38C", created: cons.CachedInfo().Created}
	answered.saidDeleted()
	sess2 := &session{stop: func() {}, incs: map[string]*incarnation{"REV38C": answered}}
	require.True(t, in2.retireReplaced(ctx, sess2), "the consumer is the same one")
	nc2.Close()
	require.False(t, in2.retireReplaced(ctx, sess2))
	require.False(t, answered.isRetired(), "a status answered by a lookup does not retire it at a later failed one")
}
