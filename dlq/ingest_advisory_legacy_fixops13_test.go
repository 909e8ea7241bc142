package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixOps13UpgradedConsoleIngestsWhatWasPendingOnTheOldAdvisoryStream:
// a deployment with its own DLQ_STREAM keeps consuming DLQ_ADVISORIES
// after the upgrade, so the give-up pending there at the upgrade is
// stored; <DLQ_STREAM>_ADVISORIES is not made. Once the old stream is
// drained and deleted (README "Upgrades"), the next start makes the new one.
func TestFixOps13UpgradedConsoleIngestsWhatWasPendingOnTheOldAdvisoryStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	old := NewIngester(IngestConfig{Stream: "DEADLETTERS", AdvisoryStream: LegacyAdvisoryStream, Watch: ws}, b.js, b.store,
		NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, old.Setup(ctx))
	old.retireWatch()
	publish(t, b.js, terminatedAdvisory(ordersStream.Name, 1))

	up := b.start(t, IngestConfig{Stream: "DEADLETTERS", Watch: ws}, nil)
	assert.Equal(t, LegacyAdvisoryStream, up.Config().AdvisoryStream)
	b.waitRows(t, 1)
	_, err := b.js.Stream(ctx, "DEADLETTERS_ADVISORIES")
	assert.ErrorIs(t, err, jetstream.ErrStreamNotFound)
	up.stop()

	// Moved: the old stream drained and deleted.
	require.NoError(t, b.js.DeleteStream(ctx, LegacyAdvisoryStream))
	moved := b.start(t, IngestConfig{Stream: "DEADLETTERS", Watch: ws}, nil)
	assert.Equal(t, "DEADLETTERS_ADVISORIES", moved.Config().AdvisoryStream)
	_, err = b.js.Stream(ctx, "DEADLETTERS_ADVISORIES")
	assert.NoError(t, err)
}

// TestFixOps13SharedOldAdvisoryStreamIsNotAdopted: DLQ_ADVISORIES holding
// another deployment's watched subjects besides ours (two deployments on
// one account shared it before the upgrade) is not taken over: Setup
// refuses, naming the stream and the runbook entry. One holding only
// another deployment's subjects is left to it.
func TestFixOps13SharedOldAdvisoryStreamIsNotAdopted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.createStream(t, jetstream.StreamConfig{Name: LegacyAdvisoryStream, Subjects: []string{
		AdvisoryTerminated + ".ORDERS.*", AdvisoryTerminated + ".EMAILS.*"}})
	in := NewIngester(IngestConfig{Stream: "DEADLETTERS", Watch: ws}, b.js, b.store,
		NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	err := in.Setup(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), LegacyAdvisoryStream)
	assert.Contains(t, err.Error(), "subjects overlap")
	assert.Equal(t, "DEADLETTERS_ADVISORIES", in.Config().AdvisoryStream)

	// Only the other deployment's subjects: ours is made beside it.
	s, err := b.js.Stream(ctx, LegacyAdvisoryStream)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.Subjects = []string{AdvisoryTerminated + ".EMAILS.*"}
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, in.Setup(ctx))
	assert.Equal(t, "DEADLETTERS_ADVISORIES", in.Config().AdvisoryStream)
}
