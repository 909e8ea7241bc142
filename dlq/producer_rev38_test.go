package dlq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestRev38TwoConsumersGivingUpAreTwoDeadLetters: two services (durable
// consumers "mailer" and "ledger") read the same message and both give up
// on it through Publish without naming themselves (Failure.Consumer is
// optional). Each is a dead letter of its own, naming its consumer. Before,
// both got the id "dlq::<msg id>": the DLQ stream answered the second
// Duplicate, Publish took the kept message (same subject and payload) for
// itself and returned nil, and the ledger's unknown_effect failure was
// never stored.
func TestRev38TwoConsumersGivingUpAreTwoDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.>"}})
	require.NoError(t, err)
	dlqStream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}, Duplicates: 2 * time.Minute})
	require.NoError(t, err)
	_, err = js.PublishMsg(ctx, &nats.Msg{Subject: "app.acme.orders.refund", Header: nats.Header{"Nats-Msg-Id": {"refund-1"}}, Data: []byte(`{"refund":1}`)})
	require.NoError(t, err)
	next := func(name string) jetstream.Msg {
		c, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy})
		require.NoError(t, err)
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		require.NoError(t, err)
		return m
	}
	require.NoError(t, Publish(ctx, js, "dlq", "acme", "orders.refund", next("mailer"), Failure{Err: errors.New("smtp timeout"), Class: ClassTransient}))
	require.NoError(t, Publish(ctx, js, "dlq", "acme", "orders.refund", next("ledger"), Failure{Err: errors.New("ledger write outcome unknown"), Class: ClassUnknownEffect}))
	info, err := dlqStream.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, info.State.Msgs, "one dead letter per consumer that gave up")
	var consumers []string
	for seq := uint64(1); seq <= 2; seq++ {
		m, err := dlqStream.GetMsg(ctx, seq)
		require.NoError(t, err)
		consumers = append(consumers, m.Header.Get(HeaderConsumer))
	}
	assert.ElementsMatch(t, []string{"mailer", "ledger"}, consumers)
}

// TestRev38CutThroughInvalidBytesKeepsTheText: an error text that echoes
// binary bytes (a run of bytes that start no UTF-8 character) is cut at
// its budget, not walked back through the whole run: before, "decode
// failed: " and 9,000 such bytes were cut to 14 bytes. A valid character
// cut through is still cut before it.
func TestRev38CutThroughInvalidBytesKeepsTheText(t *testing.T) {
	t.Parallel()
	s := "decode failed: " + strings.Repeat("\x80", 9000)
	assert.Len(t, cut(s, 8192), 8192)
	assert.Len(t, cut(strings.Repeat("\x80", 100), 50), 50)
	valid := strings.Repeat("é", 10) // 2 bytes each
	got := cut(valid, 5)
	assert.Equal(t, "éé", got)
	assert.True(t, utf8.ValidString(got))
	four := "ab" + "𝄞" + "cd" // a 4-byte character at 2
	assert.Equal(t, "ab", cut(four, 5))
	assert.Equal(t, "ab𝄞", cut(four, 6))
}
