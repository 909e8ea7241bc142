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

// TestRevIngest12AgeBelowFloorKeptSilentlyAfterUpgrade: the release before
// took any DLQ_MAX_AGE of at least 2m and made the DLQ stream with it. This
// one refuses a DLQ_MAX_AGE below 15m at start ("must be 0 or at least
// 15m": under 10m DeadLetterStreamNearLimit cannot fire before JetStream
// discards), and the operator of a console upgraded with DLQ_MAX_AGE=5m
// takes the first value the refusal offers, 0, which README says "leaves
// the stream's own". The stream keeps its 5-minute age limit, and Setup
// takes it without a word: no refusal, no warning, the stream unchanged.
// Every dead letter no console stores within 5 minutes (an outage, a
// PostgreSQL failover, a deploy) is discarded unseen, the very loss the
// floor was added for; the floor guards the setting, not the stream.
//
// Fails on the current code: Setup logs nothing at WARN or above about the
// stream's 5m age limit, and leaves it at 5m.
func TestRevIngest12AgeBelowFloorKeptSilentlyAfterUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, js := natstest.Start(t).Connect(t)
	// As the previous release made it with DLQ_MAX_AGE=5m.
	old := (&Ingester{cfg: IngestConfig{StreamMaxAge: 5 * time.Minute}}).withDefaults().dlqStreamConfig()
	_, err := js.CreateStream(ctx, old)
	require.NoError(t, err)

	logs := &lockedBuffer{}
	in := NewIngester(IngestConfig{}, js, nil, NewMetrics(prometheus.NewRegistry()),
		slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	setupErr := in.Setup(ctx)
	s, err := js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	age := s.CachedInfo().Config.MaxAge

	said := setupErr != nil || strings.Contains(logs.String(), "age")
	assert.True(t, said || age == 0 || age >= MinStreamMaxAge,
		"a DLQ stream whose own age limit (%s) is below the floor DLQ_MAX_AGE is held to (%s) is refused, raised or at least warned of; "+
			"Setup err=%v, stream max_age=%s, warnings:\n%s", age, MinStreamMaxAge, setupErr, age, logs.String())
}

// withDefaults is in with its config's defaults applied.
func (in *Ingester) withDefaults() *Ingester {
	in.cfg.defaults()
	return in
}
