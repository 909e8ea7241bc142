package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOps12SecondDeploymentTakesTheFirstsAdvisories (review revops12):
// DLQ_STREAM and DLQ_SUBJECT_PREFIX let two deployments of the console
// (staging and production, two teams) keep their dead letters apart on
// one NATS account: each makes its own stream on its own prefix, with its
// own ingest consumer. But the advisory capture is not theirs: every
// console makes and reads the stream named DLQ_ADVISORIES, through the
// durable quarantine-ingest, whatever DLQ_STREAM says (dlq.IngestConfig's
// AdvisoryStream and Durable defaults; app.New sets neither, no setting
// does), and adds its own watched streams' advisory subjects to it. The
// two deployments then pull from one consumer, in turn: every other
// give-up of the first deployment's watched stream is stored by the
// second, in its own database (tenant unknown, advisory_unreadable: an
// advisory of a stream it does not watch), and acked. The first gets it
// back only through its sweep, up to 30 s later, as "acked without a row"
// (quarantine_ingest_swept_total{outcome="stored"}): DeadLetterAckedWithoutRow
// fires for every give-up, and its runbook entry points at someone running
// `nats consumer next` by hand. The second deployment keeps junk rows of
// the first's give-ups (their advisory JSON names the first's stream,
// consumer and sequence), and its DeadLettersArriving fires for tenant
// unknown.
func TestRevOps12SecondDeploymentTakesTheFirstsAdvisories(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prod := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(c *app.Config) {
		c.Watch = watch(t, "ORDERS")
	}})
	_, js := prod.NATS.Connect(t)
	// The second deployment: its own database, stream and prefix, on the
	// same NATS account, watching a stream of its own.
	staging := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(c *app.Config) {
		c.NATSURL = prod.NATS.ClientURL()
		c.Stream, c.Prefix = "DLQ_STAGING", "dlqstaging"
		c.Watch = watch(t, "EMAILS")
	}})

	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.*.orders.>"}})
	require.NoError(t, err)
	const n = 20
	for range n {
		_, err := js.Publish(ctx, "app.acme.orders.refund", []byte(`{"amount":10}`))
		require.NoError(t, err)
	}
	cons, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	for done := 0; done < n; {
		msgs, err := cons.Fetch(n, jetstream.FetchMaxWait(time.Second))
		require.NoError(t, err)
		for m := range msgs.Messages() {
			require.NoError(t, m.TermWithReason("schema: field amount missing"))
			done++
		}
	}

	// Every row: the test publishes no dead letter of its own.
	count := func(c *testfactory.Console) int {
		var k int
		require.NoError(t, c.DB.OwnerPool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&k))
		return k
	}
	wait.Until(t, "production to store every give-up of ORDERS", 2*time.Minute, func() bool { return count(prod) >= n })
	assert.Zero(t, count(staging), "staging does not watch ORDERS, yet it pulled production's give-ups and stored them in its own database (tenant unknown, advisory_unreadable)")
	assert.Zero(t, metric(t, prod, `quarantine_ingest_swept_total{outcome="stored",stream="DLQ_ADVISORIES"}`),
		"production got its give-ups back only through its sweep (30 s later each, DeadLetterAckedWithoutRow firing): staging had acked them")
}
