package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest13UpgradeWithOwnDLQStreamKeepsAdvisories: round 12 named
// the advisory capture stream after the DLQ stream (AdvisoryStreamOf:
// "<DLQ_STREAM>_ADVISORIES"), "DLQ_ADVISORIES for the default DLQ (its
// name before it was derived: nothing to rename)". Every console before
// it used DLQ_ADVISORIES whatever its DLQ_STREAM, and no setting names the
// advisory stream. A deployment with a DLQ_STREAM of its own (here
// DEADLETTERS, one deployment, nothing shared) upgraded: the new replica
// wants DEADLETTERS_ADVISORIES on the very subjects DLQ_ADVISORIES
// captures, JetStream refuses a second stream on them ("subjects overlap
// with an existing stream"), Setup fails and the console does not start
// (in a rolling deploy: the new replicas crash-loop, DLQ ingest of the
// new ones included). The give-up captured in DLQ_ADVISORIES while the
// old console was going down is never read by the new one, and the only
// way the error leaves on-call (delete DLQ_ADVISORIES) loses it.
func TestRevIngest13UpgradeWithOwnDLQStreamKeepsAdvisories(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	// The console before round 12: its advisory stream was DLQ_ADVISORIES
	// whatever DLQ_STREAM.
	old := NewIngester(IngestConfig{Stream: "DEADLETTERS", Prefix: "deadletters", AdvisoryStream: "DLQ_ADVISORIES", Watch: ws},
		b.js, b.store, NewMetrics(prometheus.NewRegistry()), quiet)
	require.NoError(t, old.Setup(ctx))
	old.retireWatch() // it stops for the upgrade
	// A give-up raised while the console was being upgraded.
	publish(t, b.js, terminatedAdvisory("ORDERS", 1))

	// The upgraded console, same settings.
	cfg := IngestConfig{Stream: "DEADLETTERS", Prefix: "deadletters", Watch: ws, BatchSize: 100, Workers: 1, MaxWait: 50 * time.Millisecond}
	m := NewMetrics(prometheus.NewRegistry())
	in := NewIngester(cfg, b.js, b.store, m, quiet)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := in.Setup(sctx)
	require.NoError(t, err, "the upgraded console with DLQ_STREAM=DEADLETTERS starts (its advisory stream is now %s)", in.Config().AdvisoryStream)

	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(rctx) }()
	t.Cleanup(func() { stop(); <-done })
	wait.Until(t, "the give-up captured before the upgrade stored", 30*time.Second, func() bool {
		return countRows(t, b.db.Pool, "source_stream = 'ORDERS'") == 1
	})
	assert.Equal(t, 1, countRows(t, b.db.Pool, "true"))
}
