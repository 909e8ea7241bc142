package dlq

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestRev39SetupWarnsOfADLQStreamWithoutDirectGets: the console now makes
// its DLQ stream with AllowDirect, which producers' dlq.Publish reads its
// kept dead letter with; one made before (an upgrade) is left as it is.
// Before, nothing said so, and every retry a producer's Publish was
// answered Duplicate for went again under another id, stored twice. Now a
// setup over such a stream logs one warning with the command that turns
// direct gets on, and leaves the stream as it is; over a stream that
// allows them it logs nothing of it.
func TestRev39SetupWarnsOfADLQStreamWithoutDirectGets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setupOver := func(allowDirect bool) []string {
		t.Helper()
		_, js := natstest.Start(t).Connect(t)
		cfg := (&Ingester{cfg: IngestConfig{}}).withDefaults().dlqStreamConfig()
		cfg.AllowDirect = allowDirect
		_, err := js.CreateStream(ctx, cfg)
		require.NoError(t, err)
		var logs revOps11Buffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		in := NewIngester(IngestConfig{}, js, nil, NewMetrics(prometheus.NewRegistry()), log)
		require.NoError(t, in.Setup(ctx))
		s, err := js.Stream(ctx, cfg.Name)
		require.NoError(t, err)
		assert.Equal(t, allowDirect, s.CachedInfo().Config.AllowDirect, "the stream is left as it was")
		var lines []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "direct get") || strings.Contains(l, "allow-direct") {
				lines = append(lines, l)
			}
		}
		return lines
	}

	lines := setupOver(false)
	require.Len(t, lines, 1, "%q", lines)
	assert.Contains(t, lines[0], "level=WARN")
	assert.Contains(t, lines[0], "nats stream edit DLQ --allow-direct")
	assert.Contains(t, lines[0], "cannot tell a retry of a dead letter from another one")
	assert.Contains(t, lines[0], "each retry is stored twice")
	assert.Contains(t, lines[0], "stream=DLQ")

	assert.Empty(t, setupOver(true))
}
