package dlq

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevIngest33ValuesNATSSendsOtherwiseBlockReplay: a raw client
// published the original with blanks at the edge of its Nats-Msg-Id and
// of a header; the consumer's operation id had one too. nats.go reads
// them as they are but trims every value it publishes, so the dead letter
// held "refund-1" for "refund-1 " with nothing said, and a replay went out
// under an id neither the stream's duplicate window nor downstream dedupe
// knew. The helper now says which values it could not send as they were
// (Dlq-Left-Out header_value); the ingester flags left_out:header_value,
// which the replay rules block (NotWholeOf). An original whose values go
// as they are is not flagged.
func TestRevIngest33ValuesNATSSendsOtherwiseBlockReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.start(t, IngestConfig{}, nil)

	raw := b.ns.DialRaw(t)
	for _, block := range []string{
		"NATS/1.0\r\nNats-Msg-Id: refund-1 \r\nX-A: a \r\nX-Ok: fine\r\n\r\n",
		"NATS/1.0\r\nNats-Msg-Id: refund-2\r\nX-Ok: fine\r\n\r\n",
	} {
		ack, err := raw.Publish("app.acme.orders.refund", []byte(block), []byte(`{"refund":1}`))
		require.NoError(t, err)
		require.Nil(t, ack.Error)
	}
	cons, err := b.js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	batch, err := cons.Fetch(2)
	require.NoError(t, err)
	var got []jetstream.Msg
	for m := range batch.Messages() {
		got = append(got, m)
	}
	require.NoError(t, batch.Error())
	require.Len(t, got, 2)
	require.Equal(t, "refund-1 ", got[0].Headers().Get("Nats-Msg-Id"), "nats.go reads the blank")

	require.NoError(t, Publish(ctx, b.js, "dlq", "acme", "orders.refund", got[0], Failure{Err: errors.New("refused"), Consumer: "refunder", OperationID: "op-1 "}))
	require.NoError(t, Publish(ctx, b.js, "dlq", "acme", "orders.refund", got[1], Failure{Err: errors.New("refused"), Consumer: "refunder", OperationID: "op-2"}))
	b.waitRows(t, 2)

	altered := b.row(t, "tenant = 'acme' AND msg_id LIKE 'refund-1%'")
	assert.Contains(t, altered.Flags, flagLeftOut+"header_value")
	assert.Equal(t, flagLeftOut+"header_value", NotWholeOf(altered.Flags), "the replay rules block it")
	reasons := strings.Join(altered.MalformedReasons, "\n")
	for _, name := range []string{HeaderOriginalMsgID, HeaderOperationID, "X-A"} {
		assert.Contains(t, reasons, name, "the reason names each value sent otherwise")
	}
	assert.NotContains(t, reasons, "X-Ok")
	assert.Contains(t, reasons, "nats stream get ORDERS 1", "and where the original lies")

	clean := b.row(t, "tenant = 'acme' AND msg_id = 'refund-2'")
	assert.Empty(t, NotWholeOf(clean.Flags), "values that go as they are: %v", clean.Flags)
	assert.Equal(t, "op-2", clean.OperationID)
}

// TestRevIngest33ProblemSentencesAreBounded: a message repeating a header
// the parser flags per value (a Dlq-Left-Out per line) stored a sentence
// per value, thousands, many times the message's size, and the dead
// letter's page listed every one. Twenty are said, the rest counted in one
// more; the flags still name every kind.
func TestRevIngest33ProblemSentencesAreBounded(t *testing.T) {
	t.Parallel()
	values := make([]string, 3000)
	for i := range values {
		values[i] = "x"
	}
	r := ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: 1, Data: []byte("{}"),
		Header: map[string][]string{HeaderLeftOut: values, HeaderOriginalMsgID: {"m-1"}}})
	require.Len(t, r.MalformedReasons, maxReasons+1)
	last := r.MalformedReasons[maxReasons]
	assert.True(t, strings.HasPrefix(last, "and "), last)
	assert.Contains(t, last, "more problems of this message")
	assert.Contains(t, r.Flags, flagLeftOut+"other")
	assert.Equal(t, flagLeftOut+"other", NotWholeOf(r.Flags))

	one := ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: 2, Data: []byte("{}"),
		Header: map[string][]string{HeaderLeftOut: {"x"}, HeaderOriginalMsgID: {"m-2"}}})
	assert.Len(t, one.MalformedReasons, len(one.Flags), "a sentence per problem while there are few")
}
