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

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestSweep2SubjectNotUTF8AsADeliveryStoresIt: a dead letter published
// to a subject that is not UTF-8, taken off the ingest consumer by a
// peek, is stored by the sweep as a delivery of it is stored: the same
// subject, flags and reasons (JetStream's API, which reads a message by
// its sequence, gives each such byte as U+FFFD; the sweep reads the
// subject's bytes as a delivery gives them).
func TestSweep2SubjectNotUTF8AsADeliveryStoresIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, m := b.idle(t, IngestConfig{})
	raw := b.ns.DialRaw(t)
	_, err := raw.Publish("dlq.acme.orders.\xff\xfe", []byte("NATS/1.0\r\nDlq-Original-Subject: app.acme.orders\r\n\r\n"), []byte("bad subject"))
	require.NoError(t, err)
	b.peek(t, "DLQ", 1)
	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	require.Equal(t, uint64(1), res.Stored)
	assert.Equal(t, 1, swept(m, "DLQ", "stored"))

	ref := testdb.New(t)
	refIn := NewIngester(IngestConfig{Durable: "reference", Workers: 1, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour},
		b.js, NewStore(ref.Pool), NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, refIn.Setup(ctx))
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- refIn.Run(rctx) }()
	wait.Until(t, "the reference stored it", time.Minute, func() bool { return countRows(t, ref.Pool, "true") == 1 })
	stop()
	require.NoError(t, <-done)

	got, want := rowsBySeq(t, b.db.Pool), rowsBySeq(t, ref.Pool)
	require.Len(t, want, 1)
	assert.Equal(t, want[1].Flags, got[1].Flags)
	assert.Equal(t, want[1].MalformedReasons, got[1].MalformedReasons)
	assert.Equal(t, want, got, "the row a delivery stores")
}
