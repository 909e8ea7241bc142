package dlq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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

// tenantUser is a NATS user of one tenant's services, with the rights
// docs/header-contract.md tells to give them: publish on the tenant's DLQ
// subjects, and a direct get of the last message on them.
func tenantUser(tenant string) *server.User {
	return &server.User{Username: tenant, Password: tenant, Permissions: &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: []string{"dlq." + tenant + ".>", "$JS.API.DIRECT.GET.DLQ.dlq." + tenant + ".>"}},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
	}}
}

// TestRev39PublishTellsItsOwnDeadLetterWithTheTenantsRightAlone: acme's
// and globex's services hold only their own tenant's rights (tenantUser);
// the DLQ stream is the one the console makes (dlqStreamConfig). Before,
// Publish read the message the stream kept under a Duplicate answer by
// sequence ($JS.API.STREAM.MSG.GET.DLQ), a right that reads every
// tenant's dead letters, which the docs told to give every service. Now
// it reads the last message on its own subject with a direct get, and:
//   - globex's impostor, kept under the id acme's dead letter has, is not
//     taken for it: acme's goes again under another id;
//   - acme's retry, answered Duplicate for its own kept dead letter, is
//     told it is its own: stored once, with no right beyond its tenant's;
//   - a later dead letter on the same subject is not taken for the kept
//     one: the retry goes again (stored twice, never lost);
//   - with that right, acme reads none of globex's dead letters.
func TestRev39PublishTellsItsOwnDeadLetterWithTheTenantsRightAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) {
		o.Users = []*server.User{{Username: "admin", Password: "admin"}, tenantUser("acme"), tenantUser("globex")}
	})
	connect := func(user string) (*nats.Conn, jetstream.JetStream) {
		t.Helper()
		nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo(user, user), nats.Timeout(30*time.Second))
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(30*time.Second))
		require.NoError(t, err)
		return nc, js
	}
	_, admin := connect("admin")
	acmeNC, acme := connect("acme")
	_, globex := connect("globex")
	cfg := (&Ingester{cfg: IngestConfig{}}).withDefaults().dlqStreamConfig()
	require.True(t, cfg.AllowDirect, "the console's DLQ stream allows direct gets")
	dlqStream, err := admin.CreateStream(ctx, cfg)
	require.NoError(t, err)
	_, err = admin.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.>"}})
	require.NoError(t, err)
	original := func(subject, id string) jetstream.Msg {
		t.Helper()
		_, err := admin.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: nats.Header{HeaderNatsMsgID: {id}}, Data: []byte(`{"id":"` + id + `"}`)})
		require.NoError(t, err)
		c, err := admin.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
		require.NoError(t, err)
		m, err := c.Next(jetstream.FetchMaxWait(10 * time.Second))
		require.NoError(t, err)
		require.NoError(t, m.Ack())
		return m
	}
	stored := func() uint64 {
		t.Helper()
		info, err := dlqStream.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs
	}
	f := Failure{Err: errors.New("refund failed"), Class: ClassPermanent}

	// globex's impostor, under the id acme's dead letter of ORDERS #1 has.
	_, err = globex.PublishMsg(ctx, &nats.Msg{Subject: "dlq.globex.orders.refund", Data: []byte("impostor"),
		Header: nats.Header{HeaderNatsMsgID: {"dlq:refunder:refund-1:ORDERS:1"}}})
	require.NoError(t, err)
	first := original("app.acme.orders.refund", "refund-1")
	require.NoError(t, Publish(ctx, acme, "dlq", "acme", "orders.refund", first, f))
	require.EqualValues(t, 2, stored(), "acme's dead letter went again under another id")
	require.NoError(t, Publish(ctx, acme, "dlq", "acme", "orders.refund", first, f), "a retry")
	require.EqualValues(t, 2, stored(), "the retry was told the kept dead letter is its own")

	// A later dead letter on the subject: the retry of the first cannot be
	// told from it, and goes again.
	require.NoError(t, Publish(ctx, acme, "dlq", "acme", "orders.refund", original("app.acme.orders.refund", "refund-2"), f))
	require.EqualValues(t, 3, stored())
	require.NoError(t, Publish(ctx, acme, "dlq", "acme", "orders.refund", first, f), "a retry after another dead letter")
	require.EqualValues(t, 4, stored(), "stored again, not lost")
	m, err := dlqStream.GetMsg(ctx, 4)
	require.NoError(t, err)
	assert.Equal(t, "refund-1", m.Header.Get(HeaderOriginalMsgID))

	// globex's own dead letter, which acme's right does not reach.
	require.NoError(t, Publish(ctx, globex, "dlq", "globex", "orders.refund", original("app.globex.orders.refund", "refund-9"), f))
	require.EqualValues(t, 5, stored())
	ask := func(subject, body string) (*nats.Msg, error) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return acmeNC.RequestWithContext(rctx, subject, []byte(body))
	}
	own, err := ask("$JS.API.DIRECT.GET.DLQ.dlq.acme.orders.refund", "")
	require.NoError(t, err, "acme reads its own last dead letter")
	assert.Equal(t, "4", own.Header.Get(jetstream.SequenceHeader))
	for _, r := range []struct{ subject, body string }{
		{"$JS.API.DIRECT.GET.DLQ.dlq.globex.orders.refund", ""},
		{"$JS.API.DIRECT.GET.DLQ.dlq.*.orders.refund", ""},
		{"$JS.API.DIRECT.GET.DLQ.dlq.>", ""},
		{"$JS.API.DIRECT.GET.DLQ.dlq.acme.orders.refund", `{"seq":5}`},
		{"$JS.API.DIRECT.GET.DLQ.dlq.acme.orders.refund", `{"seq":5,"next_by_subj":"dlq.globex.>"}`},
		{"$JS.API.DIRECT.GET.DLQ", `{"seq":5}`},
		{"$JS.API.STREAM.MSG.GET.DLQ", `{"seq":5}`},
	} {
		got, err := ask(r.subject, r.body)
		if err == nil {
			assert.NotContains(t, string(got.Data), "refund-9", "%s %s", r.subject, r.body)
			assert.NotEqual(t, "5", got.Header.Get(jetstream.SequenceHeader), "%s %s", r.subject, r.body)
		}
	}
}
