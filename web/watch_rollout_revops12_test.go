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
