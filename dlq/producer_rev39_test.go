package dlq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestRev39CoreMessagesOnTwoSubjectsAreTwoDeadLetters: two core NATS
// messages that share a Nats-Msg-Id and carry no payload (binary
// CloudEvents carry everything in headers) fail at one consumer. One went
// to app.acme.orders.created, the other to app.acme.orders.cancelled; in a
// second case both went to one subject and differ by one header. Before,
// the dead letter's id named the payload alone, so both got
// "dlq:orders-svc:order-42:sha256:e3b0…": the DLQ stream stored the first
// and answered the second Duplicate, and the second failure (an
// unknown_effect) was lost. Now the id names the subject and headers too,
// and each is a dead letter of its own; the same failure dead-lettered
// again is still stored once.
func TestRev39CoreMessagesOnTwoSubjectsAreTwoDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	dlqStream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}, Duplicates: 2 * time.Minute})
	require.NoError(t, err)
	event := func(subject, kind string) *nats.Msg {
		return &nats.Msg{Subject: subject, Header: nats.Header{HeaderNatsMsgID: {"order-42"}, "Ce-Type": {kind}, "Ce-Id": {"order-42"}}}
	}
	send := func(orig *nats.Msg, f Failure) string {
		t.Helper()
		m, err := NewMessage("dlq", "acme", "orders", orig, Origin{}, f)
		require.NoError(t, err)
		publish(t, js, m)
		return m.Header.Get(HeaderNatsMsgID)
	}
	stored := func() uint64 {
		t.Helper()
		info, err := dlqStream.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs
	}
	transient := Failure{Err: errors.New("inventory timeout"), Class: ClassTransient, Consumer: "orders-svc"}
	unknown := Failure{Err: errors.New("ledger write outcome unknown"), Class: ClassUnknownEffect, Consumer: "orders-svc"}

	t.Run("TwoSubjects", func(t *testing.T) {
		created := send(event("app.acme.orders.created", "order"), transient)
		cancelled := send(event("app.acme.orders.cancelled", "order"), unknown)
		assert.NotEqual(t, created, cancelled)
		require.EqualValues(t, 2, stored(), "one dead letter per subject")
		assert.Equal(t, created, send(event("app.acme.orders.created", "order"), transient), "the same failure again: the same id")
		require.EqualValues(t, 2, stored(), "and stored once")
	})
	t.Run("TwoHeaders", func(t *testing.T) {
		paid := send(event("app.acme.orders.updated", "order.paid"), transient)
		shipped := send(event("app.acme.orders.updated", "order.shipped"), unknown)
		assert.NotEqual(t, paid, shipped)
		require.EqualValues(t, 4, stored(), "one dead letter per header block")
	})
	var kinds []string
	for seq := uint64(1); seq <= 4; seq++ {
		m, err := dlqStream.GetMsg(ctx, seq)
		require.NoError(t, err)
		kinds = append(kinds, m.Header.Get(HeaderOriginalSubject)+" "+m.Header.Get("Ce-Type")+" "+m.Header.Get(HeaderErrorClass))
	}
	assert.Equal(t, []string{
		"app.acme.orders.created order transient",
		"app.acme.orders.cancelled order unknown_effect",
		"app.acme.orders.updated order.paid transient",
		"app.acme.orders.updated order.shipped unknown_effect",
	}, kinds)
}
