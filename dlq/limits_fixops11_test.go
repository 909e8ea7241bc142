package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestFixOps11StreamLimitsBelowTheirFloorAreRefusedAtSetup: Setup
// refuses a DLQ_MAX_BYTES below twice the server's max_payload (a unit
// given or not: 1 MiB on a server taking 1 MiB messages) and a
// DLQ_MAX_AGE below 15 minutes, naming the setting and the floor, whether
// the stream is to be made or exists already with other limits (a later
// `nats stream rm DLQ` would make it with them), and makes or changes
// nothing; at the floor it is taken.
func TestFixOps11StreamLimitsBelowTheirFloorAreRefusedAtSetup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, js := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 1 << 20 }).Connect(t)
	ingester := func(cfg IngestConfig) *Ingester {
		return NewIngester(cfg, js, nil, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	refused := func(t *testing.T, cfg IngestConfig, want string) {
		t.Helper()
		err := ingester(cfg).SetupWithin(ctx, time.Minute)
		require.Error(t, err)
		assert.Contains(t, err.Error(), want)
	}
	const bytesFloor = "must be 0 or at least 2097152 bytes, twice the NATS server's max_payload (1048576)"
	refused(t, IngestConfig{StreamMaxBytes: 1 << 20}, "DLQ_MAX_BYTES 1048576: "+bytesFloor)
	refused(t, IngestConfig{StreamMaxAge: 10 * time.Minute}, "DLQ_MAX_AGE 10m0s: must be 0 or at least 15m")
	_, err := js.Stream(ctx, "DLQ")
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "nothing made")

	require.NoError(t, ingester(IngestConfig{StreamMaxBytes: 2 << 20, StreamMaxAge: 15 * time.Minute}).Setup(ctx), "at the floors")
	refused(t, IngestConfig{StreamMaxBytes: 10}, "DLQ_MAX_BYTES 10: "+bytesFloor)
	s, err := js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, int64(2<<20), s.CachedInfo().Config.MaxBytes, "an existing stream is left as it was")
}
