package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestRevOps11TinyStreamMaxBytesLosesEveryDeadLetter (review rev-ops 11):
// DLQ_MAX_BYTES takes a bare number as bytes, with no floor, so
// DLQ_MAX_BYTES=10 (meant as 10 GiB, the unit forgotten; README's example
// is "10GiB") is accepted, and a new DLQ stream (a fresh deploy, or the
// one every console makes again after the runbook's `nats stream rm DLQ
// -f`) is made with a 10-byte limit. JetStream then acks each dead letter
// to its producer (which believes it dead-lettered and acks its original)
// and discards it at once: the stream holds nothing, the consumer delivers
// nothing, nothing is stored. No figure shows it: pending, unacked, the
// stream's bytes and quarantine_dlq_stream_limit_risk_ratio all read 0,
// so DeadLetterStreamNearLimit and the ingest alerts stay quiet while every
// dead letter is lost. A limit below one message the server takes
// (its max_payload) can hold no dead letter: setup must refuse it, naming
// DLQ_MAX_BYTES, or the stream must keep what it acked until it is stored.
func TestRevOps11TinyStreamMaxBytesLosesEveryDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in := NewIngester(IngestConfig{StreamMaxBytes: 10, BatchSize: 10, Workers: 1, AckWait: time.Minute}, b.js, b.store,
		NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := in.Setup(ctx); err != nil {
		// Refused at start: the operator sees the setting named (the fix).
		require.Contains(t, err.Error(), "DLQ_MAX_BYTES", "the refusal names the setting")
		return
	}
	// A producer dead-letters a message (ingest not running yet, as in an
	// outage or before the first console's Run).
	ack, err := b.js.Publish(ctx, "dlq.acme.orders.created", []byte(`{"order":42,"reason":"payment declined after three retries"}`))
	require.NoError(t, err, "the producer's publish")
	s, err := b.js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	if info.State.Msgs == 0 {
		t.Fatalf("DLQ_MAX_BYTES=10 was taken: the stream was made with max_bytes %d, JetStream acked the dead letter (seq %d) "+
			"to its producer and holds %d messages: it is lost before any console can store it, and no metric shows it "+
			"(stream bytes %d, nothing pending)", info.Config.MaxBytes, ack.Sequence, info.State.Msgs, info.State.Bytes)
	}
}
