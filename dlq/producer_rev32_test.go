package dlq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// nextOrder makes a durable consumer of ORDERS (cfg's other fields as
// given) and returns the next message it delivers.
func (b *bundle) nextOrder(t *testing.T, cfg jetstream.ConsumerConfig) jetstream.Msg {
	t.Helper()
	cfg.AckPolicy = jetstream.AckExplicitPolicy
	cons, err := b.js.CreateOrUpdateConsumer(context.Background(), "ORDERS", cfg)
	require.NoError(t, err)
	m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	require.NoError(t, err)
	return m
}

// TestRevIngest32UnsendableHeaderNamesAreCarried: an original carried
// header names the NATS server takes from a raw client and nats.go reads,
// but refuses to publish ("X Trace", "a/b", "k@v", "(x)", non-ASCII).
// NewMessage copied them as they were, so Publish failed with
// ErrBadHeaderMsg on every try and the dead letter was never stored. Now
// they travel in Dlq-Unsendable-Headers; the ingester puts them back among
// the dead letter's headers, flagged unsendable:header_name, which the
// replay rules block (NotWhole), under the original's message id.
func TestRevIngest32UnsendableHeaderNamesAreCarried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.start(t, IngestConfig{}, nil)

	block := "NATS/1.0\r\nNats-Msg-Id: refund-1\r\nX Trace: t1\r\na/b: 2\r\nk@v: 3\r\n(x): 4\r\nÜber: 5\r\nX-Ok: fine\r\n\r\n"
	ack, err := b.ns.DialRaw(t).Publish("app.acme.orders.refund", []byte(block), []byte(`{"refund":1}`))
	require.NoError(t, err)
	require.Nil(t, ack.Error)
	m := b.nextOrder(t, jetstream.ConsumerConfig{Durable: "refunder"})
	require.Equal(t, "t1", m.Headers().Get("X Trace"), "nats.go reads the name")

	require.NoError(t, Publish(ctx, b.js, "dlq", "acme", "orders.refund", m, Failure{Err: errors.New("refused"), Consumer: "refunder"}))
	b.waitRows(t, 1)
	d := b.row(t, "tenant = 'acme'")
	assert.Equal(t, "refund-1", d.MsgID)
	assert.Equal(t, []byte(`{"refund":1}`), d.Payload)
	h := b.storedHeaders(t, d)
	for name, v := range map[string]string{"X Trace": "t1", "a/b": "2", "k@v": "3", "(x)": "4", "Über": "5", "X-Ok": "fine"} {
		assert.Equal(t, []string{v}, h[name], name)
	}
	assert.NotContains(t, h, HeaderUnsendable, "read back into the headers")
	assert.Contains(t, d.Flags, FlagUnsendableNames)
	assert.Equal(t, FlagUnsendableNames, NotWholeOf(d.Flags), "the replay rules block it")
}

// TestRevIngest32OversizedFailureTextIsCut: a long error or stack trace
// (escaping grows it) made the dead letter's header block larger than
// the 65,535 bytes JetStream stores, and every publish failed (10097).
// Now each is cut to a budget, marked in Dlq-Cut with its whole length,
// and cut further when the original's headers need the room; the
// ingester flags cut:error and cut:stack, and the original's headers are
// stored whole.
func TestRevIngest32OversizedFailureTextIsCut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.start(t, IngestConfig{}, nil)

	big := strings.Repeat("h", 40<<10)
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("x"), Header: nats.Header{HeaderNatsMsgID: {"refund-2"}, "X-Big": {big}}})
	m := b.nextOrder(t, jetstream.ConsumerConfig{Durable: "refunder"})
	errText := strings.Repeat("bad\tvalue\n", 10<<10) // 100 KiB, escaped larger
	stack := strings.Repeat("goroutine 1 [running]:\n\tmain.go:1\n", 8<<10)
	require.NoError(t, Publish(ctx, b.js, "dlq", "acme", "orders.refund", m, Failure{Err: errors.New(errText), Stack: stack, Consumer: "refunder"}))

	b.waitRows(t, 1)
	d := b.row(t, "tenant = 'acme'")
	assert.Equal(t, "refund-2", d.MsgID)
	assert.True(t, slices.Equal([]string{big}, b.storedHeaders(t, d)["X-Big"]), "the original's header is kept whole")
	assert.Contains(t, d.Flags, "cut:error")
	assert.Contains(t, d.Flags, "cut:stack")
	assert.True(t, strings.HasPrefix(errText, d.Error) && len(d.Error) >= 1<<10, "the error's start is kept: %d bytes", len(d.Error))
	assert.True(t, strings.HasPrefix(stack, d.Stack), "the stack's start is kept")
	assert.Empty(t, NotWholeOf(d.Flags), "a cut error or stack does not block a replay")
}

// TestRevIngest32HugeOriginalHeadersAreLeftOut: an original whose own
// headers nearly fill the 64 KiB JetStream stores has no room for the
// dead letter's: every publish failed (10097). Now the original's headers
// are left out, said so in Dlq-Left-Out; the dead letter is stored under
// the original's id, flagged left_out:headers, which blocks its replay.
func TestRevIngest32HugeOriginalHeadersAreLeftOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.start(t, IngestConfig{}, nil)

	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("x"),
		Header: nats.Header{HeaderNatsMsgID: {"refund-3"}, "X-Big": {strings.Repeat("h", 65300)}}})
	m := b.nextOrder(t, jetstream.ConsumerConfig{Durable: "refunder"})
	require.NoError(t, Publish(ctx, b.js, "dlq", "acme", "orders.refund", m, Failure{Err: errors.New("refused"), Consumer: "refunder"}))

	b.waitRows(t, 1)
	d := b.row(t, "tenant = 'acme'")
	assert.Equal(t, "refund-3", d.MsgID)
	assert.Equal(t, []byte("x"), d.Payload, "the payload is kept")
	assert.Equal(t, "refused", d.Error)
	_, kept := b.storedHeaders(t, d)["X-Big"]
	assert.False(t, kept, "the original's own headers are left out")
	assert.Contains(t, d.Flags, "left_out:headers")
	assert.Equal(t, "left_out:headers", NotWholeOf(d.Flags))
}

// TestRevIngest32PayloadOverMaxPayloadIsLeftOut: an original that fit the
// server's max_payload no longer did with the dead letter's headers, and
// every publish failed (nats.ErrMaxPayload). Now the payload is left out,
// said so in Dlq-Left-Out with its size and SHA-256 and where the
// original lies; the ingester stores it payload unavailable, flagged
// left_out:payload (never replayed).
func TestRevIngest32PayloadOverMaxPayloadIsLeftOut(t *testing.T) {
	t.Parallel()
	b := &bundle{db: testdb.New(t), ns: natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 64 << 10 })}
	b.nc, b.js = b.ns.Connect(t)
	b.store = NewStore(b.db.Pool)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.start(t, IngestConfig{}, nil)

	payload := []byte(strings.Repeat("p", 64<<10-200))
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: payload, Header: nats.Header{HeaderNatsMsgID: {"refund-4"}}})
	m := b.nextOrder(t, jetstream.ConsumerConfig{Durable: "refunder"})
	require.NoError(t, Publish(ctx, b.js, "dlq", "acme", "orders.refund", m, Failure{Err: errors.New("refused"), Consumer: "refunder"}))

	b.waitRows(t, 1)
	d := b.row(t, "tenant = 'acme'")
	assert.Equal(t, "refund-4", d.MsgID)
	assert.True(t, d.PayloadUnavailable)
	assert.Contains(t, d.Flags, "left_out:payload")
	sum := sha256.Sum256(payload)
	assert.Contains(t, strings.Join(d.MalformedReasons, "\n"), hex.EncodeToString(sum[:]), "the reason names the payload's SHA-256")
	assert.Contains(t, strings.Join(d.MalformedReasons, "\n"), "ORDERS #1", "and where the original lies")
}

// TestRevIngest32HeadersOnlyDeliveryReadWhole: a delivery of a consumer
// made headers only carries Nats-Msg-Size and no payload. NewMessage
// dropped that header with the other Nats-* ones, so the ingester's
// mayLackPayload never saw it and an empty payload was stored replayable
// under the original's id. Now Publish reads the original whole from its
// stream; when it cannot, the dead letter says the payload is left out
// (left_out:payload: payload unavailable, never replayed).
func TestRevIngest32HeadersOnlyDeliveryReadWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.start(t, IngestConfig{}, nil)

	for _, id := range []string{"refund-7", "refund-8"} {
		publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte(`{"id":"` + id + `"}`), Header: nats.Header{HeaderNatsMsgID: {id}}})
	}
	f := Failure{Err: errors.New("refused"), Consumer: "refunder"}
	m := b.nextOrder(t, jetstream.ConsumerConfig{Durable: "refunder", HeadersOnly: true})
	require.Empty(t, m.Data())
	require.NotEmpty(t, m.Headers().Get(nats.MsgSize))
	require.NoError(t, Publish(ctx, b.js, "dlq", "acme", "orders.refund", m, f))
	b.waitRows(t, 1)
	d := b.row(t, "msg_id = 'refund-7'")
	assert.Equal(t, []byte(`{"id":"refund-7"}`), d.Payload, "read whole from its stream")
	assert.False(t, d.PayloadUnavailable)
	assert.Empty(t, NotWholeOf(d.Flags))

	cons, err := b.js.Consumer(ctx, "ORDERS", "refunder")
	require.NoError(t, err)
	next, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	require.NoError(t, err)
	s, err := b.js.Stream(ctx, "ORDERS")
	require.NoError(t, err)
	require.NoError(t, s.DeleteMsg(ctx, 2))
	require.NoError(t, Publish(ctx, b.js, "dlq", "acme", "orders.refund", next, f))
	b.waitRows(t, 2)
	d = b.row(t, "msg_id = 'refund-8'")
	assert.True(t, d.PayloadUnavailable, "an empty payload is not stored as the original's")
	assert.Contains(t, d.Flags, "left_out:payload")
}

// TestRevIngest32CutKeepsCharactersAndEscapes: a text cut to its budget
// must read back as the start of the text: never half a UTF-8 character
// (stored as U+FFFD) nor half an escape ("\" without its partner, which
// UnescapeLines would read as another character).
func TestRevIngest32CutKeepsCharactersAndEscapes(t *testing.T) {
	for _, c := range []struct {
		text string
		n    int
	}{{"abcdef", 3}, {"aé", 2}, {"a\\b", 2}, {"a\nb", 2}, {"a\\\\\nb", 4}, {"日本語", 4}, {"short", 99}} {
		cut := cutEscaped(EscapeLines(c.text), c.n)
		assert.LessOrEqual(t, len(cut), c.n, "%q", c.text)
		assert.True(t, utf8.ValidString(cut), "%q cut to %q", c.text, cut)
		assert.True(t, strings.HasPrefix(c.text, UnescapeLines(cut)), "%q cut to %q reads back as its start", c.text, cut)
	}
}
