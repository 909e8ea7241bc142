package dlq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestRev39RetryOfADeadLetterWithoutItsPayloadIsStoredOnce: a dead letter
// too large for the server's max_payload leaves its payload out, and says
// so in Dlq-Left-Out with the payload's size and SHA-256 and the size the
// message would have had, which counts this call's attempts and times. A
// retry of it (another delivery, attempt count and time) said that size
// otherwise and was stored again; Dlq-Left-Out is now compared by what was
// left out, and the retry is taken for its own. Another payload left out
// (another SHA-256) is not.
func TestRev39RetryOfADeadLetterWithoutItsPayloadIsStoredOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 16 << 10 })
	nc, err := nats.Connect(ns.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(30*time.Second))
	require.NoError(t, err)
	dlqStream, err := js.CreateStream(ctx, (&Ingester{cfg: IngestConfig{}}).withDefaults().dlqStreamConfig())
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.>"}})
	require.NoError(t, err)
	orders, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	_, err = js.PublishMsg(ctx, &nats.Msg{Subject: "app.acme.orders.refund", Header: nats.Header{HeaderNatsMsgID: {"refund-7"}},
		Data: []byte(`{"blob":"` + strings.Repeat("z", 16<<10-140) + `"}`)})
	require.NoError(t, err)
	stored := func() uint64 {
		info, err := dlqStream.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs
	}

	first, err := orders.Next(jetstream.FetchMaxWait(10 * time.Second))
	require.NoError(t, err)
	f := Failure{Err: errors.New("refund outcome unknown"), Class: ClassUnknownEffect, Principal: "alice", Consumer: "refunder"}
	require.NoError(t, Publish(ctx, js, "dlq", "acme", "orders.refund", first, f))
	require.EqualValues(t, 1, stored())
	m, err := dlqStream.GetLastMsgForSubject(ctx, "dlq.acme.orders.refund")
	require.NoError(t, err)
	require.Contains(t, m.Header.Get(HeaderLeftOut), "payload: its", "the payload was left out")

	require.NoError(t, first.Nak())
	again, err := orders.Next(jetstream.FetchMaxWait(10 * time.Second))
	require.NoError(t, err)
	md, err := again.Metadata()
	require.NoError(t, err)
	require.EqualValues(t, 2, md.NumDelivered)
	f.Attempts = 123456 // another attempt count: another size of the message left out
	require.NoError(t, Publish(ctx, js, "dlq", "acme", "orders.refund", again, f))
	assert.EqualValues(t, 1, stored(), "the retry is taken for its own dead letter")

	assert.Equal(t, []string{"payload abc"}, leftOutKeys([]string{"payload: its 9 bytes (SHA-256 abc) would make the message 17 bytes, over"}))
	assert.NotEqual(t, leftOutKeys([]string{"payload: its 9 bytes (SHA-256 abc) would"}), leftOutKeys([]string{"payload: its 9 bytes (SHA-256 abd) would"}),
		"another payload left out is another dead letter")
}
