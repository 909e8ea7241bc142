package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestRevOps13UpgradeWithOwnDLQStreamKeepsAdvisories: before this
// release the advisory stream was DLQ_ADVISORIES whatever DLQ_STREAM; now
// it is <DLQ_STREAM>_ADVISORIES (dlq/ingest.go:97). A deployment that set
// its own DLQ_STREAM (one console, alone on its NATS account) and watches
// streams has, at the upgrade, DLQ_ADVISORIES capturing its watched
// streams' advisory subjects. The new console makes <DLQ_STREAM>_ADVISORIES
// on the same subjects, JetStream refuses subjects another stream holds,
// and every upgraded replica fails at start (the advisories still pending
// on DLQ_ADVISORIES are left there). README's Upgrades section says
// nothing of it.
func TestRevOps13UpgradeWithOwnDLQStreamKeepsAdvisories(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	newIngester := func(cfg IngestConfig) *Ingester {
		return NewIngester(cfg, b.js, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	}

	// The release before: DLQ_STREAM=DEADLETTERS, advisories on DLQ_ADVISORIES.
	old := newIngester(IngestConfig{Stream: "DEADLETTERS", AdvisoryStream: "DLQ_ADVISORIES", Watch: ws})
	require.NoError(t, old.Setup(ctx))
	old.retireWatch()
	publish(t, b.js, terminatedAdvisory(ordersStream.Name, 1)) // a give-up waiting to be ingested at the upgrade

	// The upgrade: the same settings, this release.
	upgraded := newIngester(IngestConfig{Stream: "DEADLETTERS", Watch: ws})
	require.NoError(t, upgraded.Setup(ctx), "an upgraded console with its own DLQ_STREAM does not start")
}
