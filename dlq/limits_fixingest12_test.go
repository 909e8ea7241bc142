package dlq

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// belowFloorGauge is quarantine_dlq_stream_limit_below_floor{stream, limit}
// as reg has it; -1 when it has none.
func belowFloorGauge(t *testing.T, reg *prometheus.Registry, stream, limit string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "quarantine_dlq_stream_limit_below_floor" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["stream"] == stream && labels["limit"] == limit {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// TestFixIngest12SetUpAgainGoesOnAndMakesStreamThatFits: a DLQ_MAX_BYTES
// below twice the server's max_payload is refused at start (Setup) only.
// A running replica that sets ingest up again (setUpAgain: again,
// pauseForPostgres) goes on, says the setting would be refused at the next
// start, and makes a stream it finds gone with twice max_payload, saying
// so; the stream it made is not below the floor, and the "not applied"
// line never offers to lower a larger stream below it.
func TestFixIngest12SetUpAgainGoesOnAndMakesStreamThatFits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nc, js := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 8 << 20 }).Connect(t)
	require.EqualValues(t, 8<<20, nc.MaxPayload())
	logs := &lockedBuffer{}
	reg := prometheus.NewRegistry()
	in := NewIngester(IngestConfig{StreamMaxBytes: 2 << 20}, js, nil, NewMetrics(reg),
		slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})))

	require.ErrorContains(t, in.Setup(ctx), "DLQ_MAX_BYTES 2097152: must be 0", "the start refuses it")
	_, err := js.Stream(ctx, "DLQ")
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "a refused start makes nothing")

	require.NoError(t, in.setUpAgain(ctx), "a running replica goes on")
	s, err := js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	assert.EqualValues(t, 16<<20, s.CachedInfo().Config.MaxBytes, "made with twice max_payload, not DLQ_MAX_BYTES")
	assert.Contains(t, logs.String(), "making the DLQ stream with twice the NATS server's max_payload")
	assert.Contains(t, logs.String(), "a limit the console refuses at start is in force")
	assert.NotContains(t, logs.String(), "size limit is below twice", "the stream made fits")
	assert.EqualValues(t, 0, belowFloorGauge(t, reg, "DLQ", "bytes"))

	// Raised by hand above the floor: the command offered lowers it to the
	// floor at most, never to DLQ_MAX_BYTES.
	cfg := s.CachedInfo().Config
	cfg.MaxBytes = 64 << 20
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, in.setUpAgain(ctx))
	assert.Contains(t, logs.String(), "nats stream edit DLQ --max-bytes 16777216")
	assert.NotContains(t, logs.String(), "--max-bytes 2097152")
}

// TestFixIngest12StreamOwnLimitsBelowFloorExported: with DLQ_MAX_AGE and
// DLQ_MAX_BYTES 0 the stream keeps its own limits (set by hand, or by an
// earlier release); below the floors they are warned of at setup with the
// command that raises them, and exported
// (quarantine_dlq_stream_limit_below_floor) from the first check; once
// raised, the next check sets the gauge back to 0.
func TestFixIngest12StreamOwnLimitsBelowFloorExported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nc, js := natstest.Start(t).Connect(t)
	maxPayload := nc.MaxPayload()
	old := (&Ingester{cfg: IngestConfig{StreamMaxAge: 5 * time.Minute, StreamMaxBytes: maxPayload}}).withDefaults().dlqStreamConfig()
	_, err := js.CreateStream(ctx, old)
	require.NoError(t, err)

	logs := &lockedBuffer{}
	reg := prometheus.NewRegistry()
	in := NewIngester(IngestConfig{}, js, nil, NewMetrics(reg), slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, in.Setup(ctx), "the stream's own limits are no reason to refuse")
	assert.Contains(t, logs.String(), "the DLQ stream's own age limit is below 15m")
	assert.Contains(t, logs.String(), "nats stream edit DLQ --max-age 900s")
	assert.Contains(t, logs.String(), "the DLQ stream's size limit is below twice the NATS server's max_payload")
	assert.Contains(t, logs.String(), "nats stream edit DLQ --max-bytes "+strconv.FormatInt(2*maxPayload, 10))

	in.check(ctx, "DLQ")
	assert.EqualValues(t, 1, belowFloorGauge(t, reg, "DLQ", "age"))
	assert.EqualValues(t, 1, belowFloorGauge(t, reg, "DLQ", "bytes"))

	s, err := js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxAge, cfg.MaxBytes = time.Hour, 2*maxPayload
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	in.check(ctx, "DLQ")
	assert.EqualValues(t, 0, belowFloorGauge(t, reg, "DLQ", "age"))
	assert.EqualValues(t, 0, belowFloorGauge(t, reg, "DLQ", "bytes"))
	assert.Contains(t, logs.String(), "no longer below")
}

// TestFixIngest12WatchedStreamDeletedSaysNoLongerExists: a watched stream
// a check found, deleted while the console runs, is said to be gone, not
// not made yet.
func TestFixIngest12WatchedStreamDeletedSaysNoLongerExists(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, js := natstest.Start(t).Connect(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	require.NoError(t, err)
	logs := &lockedBuffer{}
	in := NewIngester(IngestConfig{Watch: []WatchStream{{Name: "ORDERS"}}, WatchGrace: time.Hour}, js, nil,
		NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, in.Setup(ctx))
	require.NoError(t, js.DeleteStream(ctx, "ORDERS"))
	in.checkWatched(ctx)
	assert.Contains(t, logs.String(), "no longer exists")
	assert.NotContains(t, logs.String(), "does not exist yet")
}

// TestFixIngest12AckedWhenStoppedAfterCommit: a batch whose commit landed
// is acked though Run's context ends right after it: whether its consumer
// is still the one that delivered it is asked without that context (as
// handBack does), not given up on, which would leave it to come again
// after its ack wait.
func TestFixIngest12AckedWhenStoppedAfterCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	in := NewIngester(IngestConfig{}, b.js, b.store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	in.afterCommit = func(int) bool {
		time.Sleep(confirmAfter + 200*time.Millisecond) // the batch is asked about
		cancel()
		return true
	}
	require.NoError(t, in.Setup(ctx))
	done := make(chan error, 1)
	go func() { done <- in.Run(runCtx) }()
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("x")})
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("ingest did not stop")
	}
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'x'::bytea"))
	wait.Until(t, "the stored dead letter acked", 10*time.Second, func() bool {
		cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
		return err == nil && cons.CachedInfo().AckFloor.Stream == 1
	})
}

// checkedConsole is an ingester of ackWait (0: the default) set up on js
// and checked once: what it logged and its gauges' registry.
func checkedConsole(t *testing.T, js jetstream.JetStream, ackWait time.Duration) (*lockedBuffer, *prometheus.Registry) {
	t.Helper()
	ctx := context.Background()
	logs := &lockedBuffer{}
	reg := prometheus.NewRegistry()
	in := NewIngester(IngestConfig{AckWait: ackWait}, js, nil, NewMetrics(reg), slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, in.Setup(ctx), "the stream's own limit is no reason to refuse")
	in.check(ctx, "DLQ")
	return logs, reg
}

// streamOfOwnAge is a NATS server whose DLQ stream has an age limit of its
// own, age.
func streamOfOwnAge(t *testing.T, age time.Duration) jetstream.JetStream {
	t.Helper()
	_, js := natstest.Start(t).Connect(t)
	_, err := js.CreateStream(context.Background(), (&Ingester{cfg: IngestConfig{StreamMaxAge: age}}).withDefaults().dlqStreamConfig())
	require.NoError(t, err)
	return js
}

// TestRev39StreamOwnAgeLimitWithinFourAckWaitsIsWarned: a stream's own
// age limit (DLQ_MAX_AGE 0 keeps it) within four ingest ack waits is
// warned of and exported like one below 15 minutes: a killed replica's
// batch, delivered again only after the ack wait, may be discarded first.
func TestRev39StreamOwnAgeLimitWithinFourAckWaitsIsWarned(t *testing.T) {
	t.Parallel()
	js := streamOfOwnAge(t, 30*time.Minute)
	logs, reg := checkedConsole(t, js, 10*time.Minute)
	assert.Contains(t, logs.String(), "the DLQ stream's own age limit is below 40m")
	assert.Contains(t, logs.String(), "nats stream edit DLQ --max-age 2400s")
	assert.EqualValues(t, 1, belowFloorGauge(t, reg, "DLQ", "age"))

	// A console with the default ack wait (a minute), four of which fit
	// in 30 minutes: the consumer keeps the 10 minutes the first one
	// raised it to (a console never lowers it), and redeliveries follow
	// that, so its check warns and exports all the same.
	otherLogs, otherReg := checkedConsole(t, js, 0)
	assert.Contains(t, otherLogs.String(), "the DLQ stream's own age limit is below 40m")
	assert.EqualValues(t, 1, belowFloorGauge(t, otherReg, "DLQ", "age"))
}

// TestRev39StreamOwnAgeLimitAboveFourAckWaitsIsNotWarned: a stream whose
// own age limit holds four of the consumer's ack waits is not warned of.
func TestRev39StreamOwnAgeLimitAboveFourAckWaitsIsNotWarned(t *testing.T) {
	t.Parallel()
	logs, reg := checkedConsole(t, streamOfOwnAge(t, 30*time.Minute), 0)
	assert.NotContains(t, logs.String(), "own age limit is below")
	assert.EqualValues(t, 0, belowFloorGauge(t, reg, "DLQ", "age"))
}

// TestRev39FloorTextSaysSeconds: a floor that is not whole minutes (four
// ack waits of 3m50s) is written with its seconds, not cut to 15m.
func TestRev39FloorTextSaysSeconds(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "15m20s", minutesText(4*(3*time.Minute+50*time.Second)))
	assert.Equal(t, "15m", minutesText(15*time.Minute))
	assert.Equal(t, "4h", minutesText(4*time.Hour))
	assert.Equal(t, "2h30m", minutesText(150*time.Minute))
}
