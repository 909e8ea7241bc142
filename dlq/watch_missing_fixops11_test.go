package dlq

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixOps11WatchedStreamMissingIsExported: a watched stream that does
// not exist is a warning at setup naming it and DLQ_WATCH_STREAMS, and
// quarantine_ingest_watched_stream_missing{stream} is 1 for it (0 for one
// that exists); made later, the next check finds it: the gauge goes to 0
// and the log says so. Setup does not refuse it.
func TestFixOps11WatchedStreamMissingIsExported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	js, watch := watchingOrders(t, "ORDERS,EMAILS")
	b := &bundle{js: js}
	var logs revOps11Buffer
	reg := prometheus.NewRegistry()
	in := NewIngester(IngestConfig{Watch: watch, HealthEvery: 100 * time.Millisecond}, js, nil, NewMetrics(reg),
		slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, in.Setup(ctx))
	gauge := func(stream string) float64 {
		return testutil.ToFloat64(missingGauge{reg: reg, stream: stream})
	}
	assert.Equal(t, 1.0, gauge("EMAILS"))
	assert.Equal(t, 0.0, gauge("ORDERS"))
	warned := strings.Count(logs.String(), "level=WARN msg=\"a stream DLQ_WATCH_STREAMS names does not exist")
	assert.Equal(t, 1, warned, logs.String())
	assert.Contains(t, logs.String(), "stream=EMAILS setting=DLQ_WATCH_STREAMS")
	assert.NotContains(t, logs.String(), "stream=ORDERS setting=DLQ_WATCH_STREAMS")

	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(rctx) }()
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.>"}})
	wait.Until(t, "a check to find EMAILS", 30*time.Second, func() bool { return gauge("EMAILS") == 0 })
	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, logs.String(), "a watched stream that did not exist does now")
	assert.Equal(t, 1, strings.Count(logs.String(), "names does not exist"), "said again within watchedWarnEvery")
}

// watchingOrders starts a NATS server with a stream ORDERS and returns
// its JetStream and the watched streams DLQ_WATCH_STREAMS=watch names.
func watchingOrders(t *testing.T, watch string) (jetstream.JetStream, []WatchStream) {
	t.Helper()
	_, js := natstest.Start(t).Connect(t)
	(&bundle{js: js}).createStream(t, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"app.*.orders.>"}})
	w, err := ParseWatchStreams(watch)
	require.NoError(t, err)
	return js, w
}

// missingGauge is the one series of quarantine_ingest_watched_stream_missing
// for stream, gathered from reg.
type missingGauge struct {
	reg    *prometheus.Registry
	stream string
}

func (g missingGauge) Describe(chan<- *prometheus.Desc) {}

func (g missingGauge) Collect(ch chan<- prometheus.Metric) {
	mfs, err := g.reg.Gather()
	if err != nil {
		return
	}
	for _, mf := range mfs {
		if mf.GetName() != "quarantine_ingest_watched_stream_missing" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == g.stream {
				ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("g", "", nil, nil), prometheus.GaugeValue, m.GetGauge().GetValue())
			}
		}
	}
}
