package dlq

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a log sink the ingester's goroutines may write at once.
type revOps11Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *revOps11Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *revOps11Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRevOps11LoweredAckWaitIsAppliedOrSaid (review rev-ops 11): the
// runbook ("DeadLetterIngestConsumerChanged") tells on-call "To tune the
// consumer, change the console's settings and restart, not the consumer",
// and README's INGEST_ACK_WAIT row says it is when JetStream delivers
// again what a crashed replica had not acked. A deploy that LOWERS
// INGEST_ACK_WAIT (1h to 1m: crashed replicas' dead letters should come
// back sooner) changes nothing: consumerSettings' "below" only ever raises
// the consumer's ack wait, so the consumer keeps 1h for good, every console
// started with 1m says nothing about it, and the next OOM-killed replica's
// dead letters wait an hour (DeadLetterIngestBehind fires for an hour with
// every console healthy). DLQ_MAX_AGE/DLQ_MAX_BYTES, the same "never
// lower" rule, log "... not applied" with the command that does it; the
// ack wait says nothing. The test restarts ingest (every replica now runs
// the lowered value) and expects either the consumer to take it or a log
// line naming INGEST_ACK_WAIT.
func TestRevOps11LoweredAckWaitIsAppliedOrSaid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	// The deploy before: INGEST_ACK_WAIT=1h.
	old := b.start(t, IngestConfig{AckWait: time.Hour, BatchSize: 10, Workers: 1}, nil)
	old.stop()

	// The deploy after, every replica with INGEST_ACK_WAIT=1m.
	var logs revOps11Buffer
	b.log = slog.New(slog.NewTextHandler(&logs, nil))
	b.start(t, IngestConfig{AckWait: time.Minute, BatchSize: 10, Workers: 1}, nil)

	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	got := cons.CachedInfo().Config.AckWait
	if got != time.Minute && !strings.Contains(logs.String(), "INGEST_ACK_WAIT") {
		t.Fatalf("every console now runs INGEST_ACK_WAIT=1m, but the ingest consumer keeps ack wait %s and no log line says "+
			"INGEST_ACK_WAIT was not applied; a killed replica's dead letters now wait %s, not 1m. Log:\n%s", got, got, logs.String())
	}
}
