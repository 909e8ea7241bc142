package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProducerSameMsgIDDistinctDeadLetters: two different messages that
// carry the same Nats-Msg-Id (a producer that reuses an id after its
// stream's duplicate window, or two streams' messages) and fail at the
// same consumer are two dead letters: the DLQ stream's duplicate window
// must not drop the second one, which the service then acks as
// dead-lettered. The same dead letter published twice (a retry after a
// lost PubAck) is still stored once.
func TestProducerSameMsgIDDistinctDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.start(t, IngestConfig{}, nil)

	orig := func(data string) *nats.Msg {
		return &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte(data), Header: nats.Header{HeaderNatsMsgID: {"order-7"}}}
	}
	send := func(m *nats.Msg, from Origin) {
		t.Helper()
		dl, err := NewMessage("dlq", "acme", "orders.refund", m, from, Failure{Err: assert.AnError, Consumer: "refunder"})
		require.NoError(t, err)
		publish(t, b.js, dl)
	}
	// Two stream messages with one id, then the first again (a retry).
	send(orig(`{"v":1}`), Origin{Stream: "ORDERS", Seq: 1})
	send(orig(`{"v":2}`), Origin{Stream: "ORDERS", Seq: 40})
	send(orig(`{"v":1}`), Origin{Stream: "ORDERS", Seq: 1})
	// Not from a stream: told apart by what they carry.
	send(orig(`{"v":3}`), Origin{})
	send(orig(`{"v":4}`), Origin{})
	send(orig(`{"v":4}`), Origin{})

	info, err := b.js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(4), info.CachedInfo().State.Msgs, "four distinct dead letters in the DLQ stream")
	b.waitRows(t, 4)
	b.waitDrained(t)
	assert.Equal(t, 4, countRows(t, b.db.Pool, "msg_id = 'order-7'"))
	for _, v := range []string{`{"v":1}`, `{"v":2}`, `{"v":3}`, `{"v":4}`} {
		assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = $1", []byte(v)), v)
	}
}

// TestProducerDuplicateOfAnotherMessageRepublished: the DLQ stream's
// duplicate window spans every tenant, and a dead letter's id can be
// foreseen (the consumer, the message id, where it lived). A producer
// that may publish dead letters of its own tenant sends one under the id
// another tenant's dead letter will have: JetStream answers that one's
// publish "duplicate" and keeps the impostor. Publish reads the message
// the stream kept, sees it is not this dead letter (another subject or
// payload), and publishes it again under an id of its own. The same dead
// letter published twice is still stored once.
func TestProducerDuplicateOfAnotherMessageRepublished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.*.orders.>"}})
	b.start(t, IngestConfig{}, nil)

	publish(t, b.js, &nats.Msg{Subject: "app.globex.orders.refund", Data: []byte(`{"refund":1}`), Header: nats.Header{HeaderNatsMsgID: {"refund-1"}}})
	// The impostor, in its own tenant, under the id globex's dead letter will have.
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte("impostor"),
		Header: nats.Header{HeaderNatsMsgID: {"dlq:refunder:refund-1:ORDERS:1"}, HeaderOriginalSubject: {"app.acme.orders.refund"}}})

	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)
	f := Failure{Err: assert.AnError, Consumer: "refunder"}
	require.NoError(t, Publish(ctx, b.js, "dlq", "globex", "orders.refund", m, f))
	require.NoError(t, Publish(ctx, b.js, "dlq", "globex", "orders.refund", m, f), "the same dead letter again (a retry)")

	b.waitRows(t, 2)
	b.waitDrained(t)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "tenant = 'globex' AND payload = $1", []byte(`{"refund":1}`)), "globex's dead letter is stored, once")
	assert.Equal(t, 1, countRows(t, b.db.Pool, "tenant = 'acme'"))
}

// TestProducerIDlessOriginalNamedByWhereAndWhen: an original without a
// Nats-Msg-Id gets, as the id its replays publish under, where and when its
// stream stored it. A stream deleted and made again numbers from 1 again:
// with the position alone, its first message would take the id of the old
// stream's first, and be reported as already replayed (or dropped in the
// target's duplicate window). The same original dead-lettered twice (a
// retry) keeps one id; without a stored time the position alone is used.
func TestProducerIDlessOriginalNamedByWhereAndWhen(t *testing.T) {
	orig := &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte(`{"v":1}`)}
	ids := func(from Origin) (original, own string) {
		t.Helper()
		m, err := NewMessage("dlq", "acme", "orders.refund", orig, from, Failure{Err: assert.AnError, Consumer: "refunder"})
		require.NoError(t, err)
		return m.Header.Get(HeaderOriginalMsgID), m.Header.Get(HeaderNatsMsgID)
	}
	before := time.Date(2026, 11, 29, 9, 0, 0, 123456789, time.UTC)
	after := before.Add(36 * time.Hour)
	oldID, oldOwn := ids(Origin{Stream: "ORDERS", Seq: 1, Time: before})
	newID, newOwn := ids(Origin{Stream: "ORDERS", Seq: 1, Time: after})
	assert.Equal(t, "ORDERS:1@2026-11-29T09:00:00.123456789Z", oldID)
	assert.NotEqual(t, oldID, newID, "the re-made stream's first message is another message")
	againID, againOwn := ids(Origin{Stream: "ORDERS", Seq: 1, Time: before.In(time.FixedZone("CET", 3600))})
	assert.Equal(t, oldID, againID, "the same original, the same id")
	assert.Equal(t, oldOwn, againOwn, "and the same dead letter: the DLQ stream stores it once")
	assert.Equal(t, "dlq:refunder:"+oldID, oldOwn, "the dead letter's id names the position once")
	assert.NotEqual(t, oldOwn, newOwn)
	unknown, _ := ids(Origin{Stream: "ORDERS", Seq: 1})
	assert.Equal(t, "ORDERS:1", unknown, "no stored time: the position")
}
