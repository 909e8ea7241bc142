package dlq

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOps11WatchedStreamThatDoesNotExistIsSaid (review rev-ops 11):
// DLQ_WATCH_STREAMS names the streams whose MAX_DELIVERIES/MSG_TERMINATED
// advisories the console captures as dead letters (README). A name that
// is no stream (a typo, ORDRES for ORDERS; a stream renamed since; the
// wrong account) is taken without a word: the advisory stream is made on
// subjects that nothing ever publishes to, every console starts and is
// ready, the dashboard and every metric read as if nothing gave up, and
// each message ORDERS' consumers give up on is never quarantined: no dead
// letter, no alert, no log line above INFO (the INFO "created stream"
// line lists the advisory subjects among others). A watched stream that
// does not exist must be said (a WARN naming it and DLQ_WATCH_STREAMS, at
// setup and while it stays missing) or refused.
func TestRevOps11WatchedStreamThatDoesNotExistIsSaid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// The stream the operator meant.
	b.createStream(t, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.*.orders.>"}})
	watch, err := ParseWatchStreams("ORDRES") // the typo
	require.NoError(t, err)

	var logs revOps11Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	in := NewIngester(IngestConfig{Watch: watch, BatchSize: 10, Workers: 1, AckWait: time.Minute}, b.js, b.store,
		NewMetrics(prometheus.NewRegistry()), log)
	if err := in.Setup(ctx); err != nil {
		require.Contains(t, err.Error(), "ORDRES", "a refusal names the stream")
		return
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(sctx) }()
	// Run's first consumer check (at start, every 5 s after) has had its
	// chance to say it once Health reports a check.
	wait.Until(t, "the ingester's first consumer check", 20*time.Second, func() bool {
		checked := 0
		for _, s := range in.Health().Streams {
			if !s.CheckedAt.IsZero() {
				checked++
			}
		}
		return checked == 2 // DLQ and DLQ_ADVISORIES
	})
	cancel()
	require.NoError(t, <-done)
	if !strings.Contains(logs.String(), "ORDRES") {
		t.Fatalf("DLQ_WATCH_STREAMS names ORDRES, which is no stream: setup and the first check took it without a warning, "+
			"so the give-ups of the stream meant are never captured and nothing says so. WARN+ log:\n%s", logs.String())
	}
}
