package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOps12WatchedStreamAddedInARollingDeployIsStoredWhole (review
// revops12): adding a stream to DLQ_WATCH_STREAMS is a rolling deploy
// like any other: for a while, replicas with the old list and replicas
// with the new one run side by side on one database and one
// DLQ_ADVISORIES consumer. The first new replica adds the new stream's
// advisory subjects to DLQ_ADVISORIES (an old one never takes a subject
// away), and from then on every replica pulls its advisories, the old
// ones too. An old replica, not watching that stream, stores each it
// pulls "as it came" (tenant unknown, advisory_unreadable: no original,
// no tenant, no payload, never replayed) and acks it. The row is there, so
// no sweep stores it again: the give-up of the new stream is kept as junk
// for good, not as the dead letter of its tenant the new replicas would
// have stored. Nothing in README's DLQ_WATCH_STREAMS or the runbook warns
// of it.
func TestRevOps12WatchedStreamAddedInARollingDeployIsStoredWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(c *app.Config) {
		c.Watch = watch(t, "ORDERS")
	}})
	_, js := old.NATS.Connect(t)
	// The new replica: same database, same NATS, EMAILS added to the list.
	testfactory.StartConsole(t, testfactory.ConsoleOptions{DatabaseURL: old.DB.URL, Configure: func(c *app.Config) {
		c.NATSURL = old.NATS.ClientURL()
		c.Watch = watch(t, "ORDERS,EMAILS")
	}})

	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"app.*.email.>"}})
	require.NoError(t, err)
	const n = 20
	for range n {
		_, err := js.Publish(ctx, "app.acme.email.send", []byte(`{"to":"someone@example.com"}`))
		require.NoError(t, err)
	}
	cons, err := js.CreateConsumer(ctx, "EMAILS", jetstream.ConsumerConfig{Durable: "mailer", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	for done := 0; done < n; {
		msgs, err := cons.Fetch(n, jetstream.FetchMaxWait(time.Second))
		require.NoError(t, err)
		for m := range msgs.Messages() {
			require.NoError(t, m.TermWithReason("smtp: mailbox unavailable"))
			done++
		}
	}

	count := func(where string) int {
		var k int
		require.NoError(t, old.DB.OwnerPool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE `+where).Scan(&k))
		return k
	}
	wait.Until(t, "a row for every give-up of EMAILS", time.Minute, func() bool { return count("true") >= n })
	assert.Zero(t, count(`'advisory_unreadable' = ANY(flags)`), "give-ups of the newly watched stream stored as junk by the replicas still on the old list")
	assert.Equal(t, n, count(`tenant = 'acme' AND item_type = 'email.send' AND payload IS NOT NULL`), "every give-up of EMAILS is acme's email.send dead letter, with its payload")
}

// watch is DLQ_WATCH_STREAMS v as serve reads it (the default template).
func watch(t *testing.T, v string) []dlq.WatchStream {
	t.Helper()
	ws, err := dlq.ParseWatchStreams(v)
	require.NoError(t, err)
	return ws
}

// TestRevOps12StreamNoLongerWatchedIsNotCapturedAsJunk (review revops12):
// a console adds the advisory subjects of each stream DLQ_WATCH_STREAMS
// names to DLQ_ADVISORIES and never takes one away
// (dlq/ingest_stream.go, streamSettings "subjects": put keeps every
// subject of the stream). Take a stream off the list (its team now
// dead-letters through dlq.Publish, or it was listed by mistake) and
// restart: DLQ_ADVISORIES still captures its give-ups, and every console
// stores each as an advisory of a stream it does not watch, tenant
// unknown, advisory_unreadable, forever (DeadLettersArriving for tenant
// unknown), until someone edits the stream by hand, which neither README
// nor the runbook says. Here the stream is as an earlier deployment that
// watched ORDERS and EMAILS left it.
func TestRevOps12StreamNoLongerWatchedIsNotCapturedAsJunk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	before := watch(t, "ORDERS,EMAILS")
	var subjects []string
	for _, w := range before {
		subjects = append(subjects, dlq.AdvisoryMaxDeliveries+"."+w.Name+".*", dlq.AdvisoryTerminated+"."+w.Name+".*")
	}
	c := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(cfg *app.Config) {
		cfg.Watch = watch(t, "ORDERS")
	}})
	_, js := c.NATS.Connect(t)
	// What the earlier deployment made: EMAILS' subjects among the
	// console's (the console puts its own back, and keeps these).
	s, err := js.Stream(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.Subjects = subjects
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"app.*.email.>"}})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "app.acme.email.send", []byte(`{"to":"someone@example.com"}`))
	require.NoError(t, err)
	cons, err := js.CreateConsumer(ctx, "EMAILS", jetstream.ConsumerConfig{Durable: "mailer", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)
	require.NoError(t, m.TermWithReason("smtp: mailbox unavailable"))

	// A marker afterwards, on the stream that is still watched: once its
	// give-up is stored, the EMAILS advisory (captured before it) has been
	// dealt with too.
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.*.orders.>"}})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "app.acme.orders.refund", []byte(`{"amount":10}`))
	require.NoError(t, err)
	oc, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	om, err := oc.Next(jetstream.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)
	require.NoError(t, om.TermWithReason("schema"))

	count := func(where string) int {
		var k int
		require.NoError(t, c.DB.OwnerPool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE `+where).Scan(&k))
		return k
	}
	wait.Until(t, "the ORDERS give-up to be stored", time.Minute, func() bool { return count(`item_type = 'orders.refund'`) == 1 })
	wait.Until(t, "the advisory stream's consumer to have nothing pending", time.Minute, func() bool {
		ci, err := js.Consumer(ctx, "DLQ_ADVISORIES", "quarantine-ingest")
		require.NoError(t, err)
		info := ci.CachedInfo()
		return info.NumPending == 0 && info.NumAckPending == 0
	})
	assert.Zero(t, count(`'advisory_unreadable' = ANY(flags)`),
		"EMAILS is no longer watched, yet its give-up was captured and stored as junk (tenant unknown, advisory_unreadable)")
}
