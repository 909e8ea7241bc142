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

// rev39Kept is a NATS server with the console's DLQ stream (AllowDirect)
// and an ORDERS stream whose "refunder" consumer gives up on messages.
type rev39Kept struct {
	admin  jetstream.JetStream
	dlq    jetstream.Stream
	orders jetstream.Consumer
	users  map[string]jetstream.JetStream
}

// setupRev39Kept starts the server with users (each connected) beside an
// admin.
func setupRev39Kept(t *testing.T, users ...*server.User) rev39Kept {
	t.Helper()
	ctx := context.Background()
	ns := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) {
		o.Users = append([]*server.User{{Username: "admin", Password: "admin"}}, users...)
	})
	connect := func(user string) jetstream.JetStream {
		t.Helper()
		nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo(user, user))
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(30*time.Second))
		require.NoError(t, err)
		return js
	}
	b := rev39Kept{admin: connect("admin"), users: map[string]jetstream.JetStream{}}
	for _, u := range users {
		b.users[u.Username] = connect(u.Username)
	}
	var err error
	b.dlq, err = b.admin.CreateStream(ctx, (&Ingester{cfg: IngestConfig{}}).withDefaults().dlqStreamConfig())
	require.NoError(t, err)
	_, err = b.admin.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.>"}})
	require.NoError(t, err)
	b.orders, err = b.admin.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	return b
}

// next publishes an order message of id and returns its delivery to the
// refunder.
func (b rev39Kept) next(t *testing.T, id string) jetstream.Msg {
	t.Helper()
	_, err := b.admin.PublishMsg(context.Background(), &nats.Msg{Subject: "app.acme.orders.refund",
		Header: nats.Header{HeaderNatsMsgID: {id}}, Data: []byte(`{"id":"` + id + `"}`)})
	require.NoError(t, err)
	return b.redelivered(t)
}

// redelivered is the refunder's next delivery.
func (b rev39Kept) redelivered(t *testing.T) jetstream.Msg {
	t.Helper()
	m, err := b.orders.Next(jetstream.FetchMaxWait(10 * time.Second))
	require.NoError(t, err)
	return m
}

// stored is the DLQ stream's messages, in order.
func (b rev39Kept) stored(t *testing.T) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	info, err := b.dlq.Info(ctx)
	require.NoError(t, err)
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := b.dlq.GetMsg(ctx, seq)
		require.NoError(t, err)
		out = append(out, m)
	}
	return out
}

// TestRev39PlantedDeadLetterUnderAForeseenIDDoesNotReplaceTheRealOne: a
// service of acme's, holding only acme's rights (tenantUser), foresees the
// id of the refunder's dead letter of ORDERS #1
// ("dlq:refunder:refund-1:ORDERS:1") and publishes first under it, with
// the same original subject, message id, consumer and payload, but
// Dlq-Error-Class transient and Dlq-Principal mallory. Before, the
// refunder's real Publish (unknown_effect, alice), answered Duplicate,
// took the planted one for its own: the real failure was lost and a
// transient class of mallory's judged its replay. Now every header but
// those a retry may send otherwise is compared, and the real one is
// stored too, as it was sent. A plain retry of it (another delivery,
// attempt count, time, error text and stack, cut to another length) is
// still taken for its own and stored once; a retry that classifies the
// failure otherwise is stored again (twice, never lost).
func TestRev39PlantedDeadLetterUnderAForeseenIDDoesNotReplaceTheRealOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupRev39Kept(t, tenantUser("acme"))
	acme := b.users["acme"]

	first := b.next(t, "refund-1")
	md, err := first.Metadata()
	require.NoError(t, err)
	planted, err := NewMessage("dlq", "acme", "orders.refund",
		&nats.Msg{Subject: first.Subject(), Header: first.Headers(), Data: first.Data()},
		Origin{Stream: md.Stream, Seq: md.Sequence.Stream, Time: md.Timestamp},
		Failure{Err: errors.New("timeout, try again"), Class: ClassTransient, Principal: "mallory", Consumer: "refunder"})
	require.NoError(t, err)
	require.Equal(t, "dlq:refunder:refund-1:ORDERS:1", planted.Header.Get(HeaderNatsMsgID), "the id mallory foresaw")
	_, err = acme.PublishMsg(ctx, planted)
	require.NoError(t, err)

	alice := Failure{Err: errors.New("refund outcome unknown"), Class: ClassUnknownEffect, Principal: "alice", Stack: strings.Repeat("x", 40000)}
	require.NoError(t, Publish(ctx, acme, "dlq", "acme", "orders.refund", first, alice))
	got := b.stored(t)
	require.Len(t, got, 2, "the real dead letter is stored beside the planted one")
	assert.Equal(t, "mallory", got[0].Header.Get(HeaderPrincipal))
	assert.Equal(t, "alice", got[1].Header.Get(HeaderPrincipal), "the real one, with its principal")
	assert.Equal(t, string(ClassUnknownEffect), got[1].Header.Get(HeaderErrorClass), "and its class")
	assert.NotEqual(t, planted.Header.Get(HeaderNatsMsgID), got[1].Header.Get(HeaderNatsMsgID), "under another id")

	// The refunder's retry: another delivery of ORDERS #1, so another
	// attempt count and time, another error text, and a stack trace cut
	// from another length (another Dlq-Cut).
	require.NoError(t, first.Nak())
	again := b.redelivered(t)
	againMD, err := again.Metadata()
	require.NoError(t, err)
	require.EqualValues(t, 2, againMD.NumDelivered)
	retry := alice
	retry.Err = errors.New("refund outcome unknown (try 2)")
	retry.Stack = strings.Repeat("x", 40001)
	require.NoError(t, Publish(ctx, acme, "dlq", "acme", "orders.refund", again, retry))
	got = b.stored(t)
	require.Len(t, got, 2, "a plain retry is taken for its own dead letter, stored once")
	assert.Equal(t, "1", got[1].Header.Get(HeaderAttempts), "the first attempt's, kept")

	// A retry that classifies the failure otherwise is another word on it.
	otherwise := retry
	otherwise.Class = ClassPermanent
	require.NoError(t, Publish(ctx, acme, "dlq", "acme", "orders.refund", again, otherwise))
	got = b.stored(t)
	require.Len(t, got, 3, "stored again, the harmless way")
	assert.Equal(t, string(ClassPermanent), got[2].Header.Get(HeaderErrorClass))
}

// TestRev39ShortDeadlineWithoutTheDirectGetRightStillStoresTheDeadLetter:
// a service holds the right to publish on acme's DLQ subjects but not the
// direct get, and its handler gives Publish 1.5 s. Its dead letter's id
// is taken (a message planted under it), so Publish reads the kept one;
// NATS does not answer a request it denies. Before, that read waited 2 s,
// or all of the 1.5 s, and the publish under another id then always
// failed with "context deadline exceeded": the dead letter was never
// stored. Now the read waits half the time left, and the dead letter is
// stored under another id within the deadline.
func TestRev39ShortDeadlineWithoutTheDirectGetRightStillStoresTheDeadLetter(t *testing.T) {
	t.Parallel()
	b := setupRev39Kept(t, &server.User{Username: "acme", Password: "acme", Permissions: &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{"dlq.acme.>"}},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
	}})
	_, err := b.admin.PublishMsg(context.Background(), &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte("planted"),
		Header: nats.Header{HeaderNatsMsgID: {"dlq:refunder:refund-1:ORDERS:1"}}})
	require.NoError(t, err)
	orig := b.next(t, "refund-1")

	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.NoError(t, Publish(ctx, b.users["acme"], "dlq", "acme", "orders.refund", orig, Failure{Err: errors.New("refund failed"), Class: ClassPermanent}))
	assert.Less(t, time.Since(start), 1500*time.Millisecond)
	got := b.stored(t)
	require.Len(t, got, 2)
	assert.Equal(t, "refund-1", got[1].Header.Get(HeaderOriginalMsgID))
	assert.True(t, strings.HasPrefix(got[1].Header.Get(HeaderNatsMsgID), "dlq:refunder:refund-1:ORDERS:1:"), "under another id: %s", got[1].Header.Get(HeaderNatsMsgID))
}
