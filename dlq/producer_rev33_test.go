package dlq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
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
	var leftOut int
	for _, reason := range r.MalformedReasons {
		if strings.HasPrefix(reason, "its producer could not send the original whole") {
			leftOut++
		}
	}
	assert.Equal(t, maxReasons, leftOut, "twenty sentences of the repeated kind")
	assert.Contains(t, r.MalformedReasons, "and 2980 more problems of this message, of the kinds said above")
	assert.LessOrEqual(t, len(r.MalformedReasons), maxReasons+1+len(r.Flags), "past twenty, only the first of a new kind")
	assert.Contains(t, r.Flags, flagLeftOut+"other")
	assert.Equal(t, flagLeftOut+"other", NotWholeOf(r.Flags))

	raw := RawForm(r, errors.New("refused"))
	assert.Contains(t, strings.Join(raw.MalformedReasons, "\n"), fmt.Sprintf("and %d more findings of the parser", 3000+1-rawFormReasons),
		"the raw form counts every finding (3,000 left-out values and the missing subject), the counted ones too")

	// The first sentence of each kind is kept, however many of another
	// kind came before it: the payload's hash and where the original lies.
	cuts := make([]string, 25)
	for i := range cuts {
		cuts[i] = "X-Nothing 12"
	}
	lost := ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: 3,
		Header: map[string][]string{HeaderCut: cuts, HeaderOriginalMsgID: {"m-3"},
			HeaderLeftOut: {"payload: its 9000000 bytes (SHA-256 abc123) would make the message too big; the original is ORDERS #7 (nats stream get ORDERS 7)"}}})
	assert.Contains(t, strings.Join(lost.MalformedReasons, "\n"), "SHA-256 abc123", "the left-out payload's sentence is kept")
	assert.LessOrEqual(t, len(lost.MalformedReasons), maxReasons+1+len(lost.Flags))

	one := ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: 2, Data: []byte("{}"),
		Header: map[string][]string{HeaderLeftOut: {"x"}, HeaderOriginalMsgID: {"m-2"}}})
	assert.Len(t, one.MalformedReasons, len(one.Flags), "a sentence per problem while there are few")
}

// TestRevIngest33OnlyValuesAReplaySendsCount: the failure's own words a
// replay does not send (the consumer) or reads trimmed alike (the
// correlation id) never mark a dead letter as holding values otherwise
// than the original had; the operation id does, named once.
func TestRevIngest33OnlyValuesAReplaySendsCount(t *testing.T) {
	t.Parallel()
	orig := &nats.Msg{Subject: "app.acme.orders.refund", Header: nats.Header{"Nats-Msg-Id": {"refund-9"}, "X-Ok": {"fine"}}, Data: []byte(`{}`)}
	dl, err := NewMessage("dlq", "acme", "orders.refund", orig, Origin{}, Failure{Err: errors.New("refused"), Consumer: "refunder\n", CorrelationID: "corr-1 "})
	require.NoError(t, err)
	assert.Empty(t, dl.Header.Values(HeaderLeftOut), "the consumer and correlation id do not block a replay")

	dl, err = NewMessage("dlq", "acme", "orders.refund", orig, Origin{}, Failure{Err: errors.New("refused"), Consumer: "refunder\n", OperationID: "op-9 "})
	require.NoError(t, err)
	left := dl.Header.Values(HeaderLeftOut)
	require.Len(t, left, 1)
	assert.Equal(t, 1, strings.Count(left[0], HeaderOperationID), left[0])
	assert.NotContains(t, left[0], HeaderConsumer)
	assert.True(t, strings.HasPrefix(left[0], "header_value: "), left[0])
}
