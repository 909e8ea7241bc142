package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest14AdoptedAdvisoryStreamSharedAgainByTheDefaultDeployment:
// two deployments on one NATS account, as README allows (staging with a
// DLQ_STREAM and prefix of its own, production with the defaults), each
// with its own PostgreSQL. Before migration 0056 only staging watched a
// stream (ORDERS), in DLQ_ADVISORIES; upgraded, staging keeps
// DLQ_ADVISORIES as its advisory stream (adoptLegacyAdvisoryStream: every
// subject on it is its own). DLQ_ADVISORIES is also the name production's
// advisory stream has (AdvisoryStreamOf("DLQ")), so when production later
// watches a stream (EMAILS), its Setup finds "its" stream there, adds
// EMAILS' subjects to it, and both deployments pull from the one durable
// quarantine-ingest on it: the sharing the rename was made to end. Each
// replica judges the other deployment's advisories by its own
// database's ingest_watchers: a stream no replica of ITS deployment
// watches, so it acks them without a row (watchedByNone), and staging's
// dropUnwatched takes EMAILS' subjects off the stream. Production's give-up
// of EMAILS that a staging replica receives is lost: no row in either
// database, acked.
//
// Either production's start must refuse (the stream is another
// deployment's), or its give-up must end as a row in its database.
func TestRevIngest14AdoptedAdvisoryStreamSharedAgainByTheDefaultDeployment(t *testing.T) {
	t.Parallel()
	b := setup(t) // staging's database and the shared NATS account
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.createStream(t, ordersStream)
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.*.send.>"}})
	orders, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	emails, err := ParseWatchStreams("EMAILS")
	require.NoError(t, err)

	// Staging before the upgrade: DLQ_ADVISORIES on ORDERS' subjects.
	stagingCfg := IngestConfig{Prefix: "stg", Stream: "DEADLETTERS", Watch: orders}
	legacyCfg := stagingCfg
	legacyCfg.AdvisoryStream = LegacyAdvisoryStream
	old := NewIngester(legacyCfg, b.js, b.store, NewMetrics(prometheus.NewRegistry()), quiet)
	require.NoError(t, old.Setup(ctx))
	old.retireWatch()

	// Staging upgraded: adopts DLQ_ADVISORIES, and runs.
	staging := b.start(t, stagingCfg, nil)
	t.Logf("staging's advisory stream: %s", staging.Config().AdvisoryStream)

	// Production (defaults, its own database) starts watching EMAILS.
	prodDB := testdb.New(t)
	prodStore := NewStore(prodDB.Pool)
	prod := NewIngester(IngestConfig{Watch: emails}, b.js, prodStore, NewMetrics(prometheus.NewRegistry()), quiet)
	if err := prod.Setup(ctx); err != nil {
		// Refused, naming the conflict: nothing is lost silently.
		assert.Contains(t, err.Error(), staging.Config().AdvisoryStream, "the refusal names the advisory stream staging adopted")
		return
	}
	shared := prod.Config().AdvisoryStream == staging.Config().AdvisoryStream
	t.Logf("production's advisory stream: %s (shared with staging: %v)", prod.Config().AdvisoryStream, shared)

	// A give-up of EMAILS, production's, while only staging's replica
	// happens to pull (production's replicas busy, restarting, or simply
	// not first). Once staging has it, it is staging's to settle: acked
	// without a row (today), or handed back for production.
	publish(t, b.js, terminatedAdvisory("EMAILS", 1))
	if shared {
		cons, err := b.js.Consumer(ctx, prod.Config().AdvisoryStream, "quarantine-ingest")
		require.NoError(t, err)
		wait.Until(t, "the advisory delivered to staging", 30*time.Second, func() bool {
			info, err := cons.Info(ctx)
			return err == nil && info.Delivered.Stream >= 1
		})
		wait.Until(t, "staging settled it", 10*time.Second, func() bool {
			info, err := cons.Info(ctx)
			return err == nil && (info.NumAckPending == 0 || info.NumRedelivered > 0)
		})
		info, err := cons.Info(ctx)
		require.NoError(t, err)
		t.Logf("advisory consumer after staging had it: ack floor %d, ack pending %d, redelivered %d", info.AckFloor.Stream, info.NumAckPending, info.NumRedelivered)
	}
	assert.Zero(t, countRows(t, b.db.Pool, "source_stream = 'EMAILS'"), "staging stores none of production's give-ups")

	// Production runs now: whatever it would have stored is gone.
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- prod.Run(pctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	})
	wait.Until(t, "production's give-up of EMAILS stored in production's database", 20*time.Second, func() bool {
		var n int
		err := prodDB.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE source_stream = 'EMAILS'`).Scan(&n)
		return err == nil && n >= 1
	})
}
