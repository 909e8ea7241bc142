package dlq

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestRevIngest25StreamLimitBelowFloorWarnedAtEverySetup: the DLQ stream's
// own limits below their floors are warned of at every setup (holdFloor
// with always: a replica's start, and setting ingest up again after an
// outage), not once per process: the warning carries the command that
// raises the limit, and the setup after an outage is where the on-call
// reads the logs. A check between setups warns only of a change.
func TestRevIngest25StreamLimitBelowFloorWarnedAtEverySetup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nc, js := natstest.Start(t).Connect(t)
	old := (&Ingester{cfg: IngestConfig{StreamMaxAge: 5 * time.Minute, StreamMaxBytes: nc.MaxPayload()}}).withDefaults().dlqStreamConfig()
	_, err := js.CreateStream(ctx, old)
	require.NoError(t, err)

	logs := &lockedBuffer{}
	in := NewIngester(IngestConfig{}, js, nil, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(logs, nil)))
	const age, size = "the DLQ stream's own age limit is below 15m", "the DLQ stream's size limit is below twice the NATS server's max_payload"
	require.NoError(t, in.Setup(ctx))
	require.Equal(t, 1, strings.Count(logs.String(), age))
	require.Equal(t, 1, strings.Count(logs.String(), size))

	in.check(ctx, "DLQ")
	assert.Equal(t, 1, strings.Count(logs.String(), age), "a check warns of a change only")

	require.NoError(t, in.Setup(ctx))
	assert.Equal(t, 2, strings.Count(logs.String(), age), "the next setup warns again")
	assert.Equal(t, 2, strings.Count(logs.String(), size), "the next setup warns again")
}
