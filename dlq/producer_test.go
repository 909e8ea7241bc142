package dlq

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
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
