package dlq_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory/ports"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// countingHandler counts the log records whose message is msg.
type countingHandler struct {
	slog.Handler
	msg string
	n   *atomic.Int32
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}

// freePorts returns n loopback ports free a moment ago (the cluster's
// route ports, which every node must know before any starts).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var free []int
	for range n {
		free = append(free, ports.Free(t))
	}
	return free
}

// TestSetupWaitsForJetStreamQuorum starts the console's ingest setup
// against the first node of a three-node JetStream cluster whose other two
// are not up yet: there is no leader, and JetStream cannot answer. Setup
// waits (saying so in the log) instead of failing the console's start, and
// once the other nodes come up it creates the DLQ stream with three
// replicas and its consumer. Before, the first timeout ended the start
// ("create consumer quarantine-ingest on DLQ: context deadline exceeded").
func TestSetupWaitsForJetStreamQuorum(t *testing.T) {
	t.Parallel()
	ports := freePorts(t, 3)
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	node := func(i int) *natstest.Server {
		return natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) {
			o.ServerName = fmt.Sprintf("n%d", i+1)
			o.Cluster = server.ClusterOpts{Name: "quarantine-test", Host: "127.0.0.1", Port: ports[i]}
			o.Routes = routes
		})
	}
	first := node(0)
	// Connected as the console connects: the client's 5 s timeout.
	nc, err := nats.Connect(first.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)

	waiting := &atomic.Int32{}
	log := slog.New(countingHandler{Handler: slog.DiscardHandler, msg: "waiting for JetStream", n: waiting})
	in := dlq.NewIngester(dlq.IngestConfig{Replicas: 3}, js, nil, dlq.NewMetrics(prometheus.NewRegistry()), log)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- in.SetupWithin(ctx, 2*time.Minute) }()

	wait.For(t, "setup waiting for JetStream", time.Minute, func() error {
		select {
		case err := <-done:
			return wait.Stop(fmt.Errorf("setup ended with one node of three: %v", err))
		default:
		}
		if waiting.Load() == 0 {
			return wait.ErrNotYet
		}
		return nil
	})
	node(1)
	node(2)
	select {
	case err := <-done:
		require.NoError(t, err, "setup once the cluster has its quorum")
	case <-ctx.Done():
		t.Fatal("setup did not end once the cluster had its quorum")
	}
	info, err := js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, 3, info.CachedInfo().Config.Replicas)
	_, err = js.Consumer(ctx, "DLQ", in.Config().Durable)
	require.NoError(t, err, "the ingest consumer exists")
}

// TestSetupRefusalEndsAtOnce: a stream that already takes the dead
// letters' subjects makes JetStream refuse the DLQ stream; that is not
// waited out, and the error says what was refused.
func TestSetupRefusalEndsAtOnce(t *testing.T) {
	t.Parallel()
	_, js := natstest.Start(t).Connect(t)
	ctx := context.Background()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"dlq.>"}})
	require.NoError(t, err)
	waiting := &atomic.Int32{}
	log := slog.New(countingHandler{Handler: slog.DiscardHandler, msg: "waiting for JetStream", n: waiting})
	in := dlq.NewIngester(dlq.IngestConfig{}, js, nil, dlq.NewMetrics(prometheus.NewRegistry()), log)
	err = in.SetupWithin(ctx, 10*time.Minute)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "overlap"), "%v", err)
	assert.Zero(t, waiting.Load(), "a refusal is not waited out")
}

// TestSetupConfigRefusalNamesTheSetting: JetStream answers a stream
// configuration it never takes with a 5xx (replicas on a server that is
// not clustered, an age limit below the duplicate window, a size limit
// above its storage), like a cluster without a leader. Setup ends at once
// and names the setting to change; it does not wait for JetStream.
func TestSetupConfigRefusalNamesTheSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cfg     dlq.IngestConfig
		setting string
	}{
		{"Replicas", dlq.IngestConfig{Replicas: 3}, "DLQ_REPLICAS 3"},
		{"MaxAge", dlq.IngestConfig{StreamMaxAge: time.Minute}, "DLQ_MAX_AGE 1m0s"},
		{"MaxBytes", dlq.IngestConfig{StreamMaxBytes: 1 << 60}, "DLQ_MAX_BYTES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, js := natstest.Start(t).Connect(t)
			waiting := &atomic.Int32{}
			log := slog.New(countingHandler{Handler: slog.DiscardHandler, msg: "waiting for JetStream", n: waiting})
			in := dlq.NewIngester(tc.cfg, js, nil, dlq.NewMetrics(prometheus.NewRegistry()), log)
			err := in.SetupWithin(context.Background(), 10*time.Minute)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.setting)
			assert.NotContains(t, err.Error(), "did not answer")
			assert.Zero(t, waiting.Load(), "a refusal is not waited out")
		})
	}
}

// TestSetupOnlyRaisesStreamLimits: a console's DLQ_MAX_AGE and
// DLQ_MAX_BYTES make a new stream's limits and raise an existing stream's
// lower ones; a higher limit, or none, is left as it is (lowering it would
// discard the oldest dead letters at once, stored or not), and each setup
// says so in the log with the command that lowers it on purpose.
func TestSetupOnlyRaisesStreamLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setupWith := func(t *testing.T, js jetstream.JetStream, age time.Duration, size int64) (jetstream.StreamConfig, []string) {
		t.Helper()
		var logs strings.Builder
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		in := dlq.NewIngester(dlq.IngestConfig{StreamMaxAge: age, StreamMaxBytes: size}, js, nil, dlq.NewMetrics(prometheus.NewRegistry()), log)
		require.NoError(t, in.Setup(ctx))
		s, err := js.Stream(ctx, "DLQ")
		require.NoError(t, err)
		return s.CachedInfo().Config, strings.Split(strings.TrimSpace(logs.String()), "\n")
	}

	// A server taking messages of 64 KiB at most: limits of 1 and 2 MiB
	// are above the least it allows (twice that, CheckStreamMaxBytes).
	smallPayloadServer := func(t *testing.T) (*nats.Conn, jetstream.JetStream) {
		return natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 64 << 10 }).Connect(t)
	}
	t.Run("NewStreamTakesThem", func(t *testing.T) {
		t.Parallel()
		_, js := smallPayloadServer(t)
		cfg, _ := setupWith(t, js, 48*time.Hour, 1<<20)
		assert.Equal(t, 48*time.Hour, cfg.MaxAge)
		assert.Equal(t, int64(1<<20), cfg.MaxBytes)
	})
	t.Run("Raised", func(t *testing.T) {
		t.Parallel()
		_, js := smallPayloadServer(t)
		setupWith(t, js, 24*time.Hour, 1<<20)
		cfg, _ := setupWith(t, js, 48*time.Hour, 2<<20)
		assert.Equal(t, 48*time.Hour, cfg.MaxAge)
		assert.Equal(t, int64(2<<20), cfg.MaxBytes)
	})
	t.Run("NotLowered", func(t *testing.T) {
		t.Parallel()
		_, js := smallPayloadServer(t)
		setupWith(t, js, 48*time.Hour, 2<<20)
		cfg, logs := setupWith(t, js, 90*time.Minute, 1<<20)
		assert.Equal(t, 48*time.Hour, cfg.MaxAge)
		assert.Equal(t, int64(2<<20), cfg.MaxBytes)
		require.Len(t, logs, 2)
		assert.Contains(t, logs[0], "DLQ_MAX_AGE not applied")
		assert.Contains(t, logs[0], "nats stream edit DLQ --max-age 5400s")
		assert.Contains(t, logs[0], "max_age=1h30m0s stream_max_age=48h0m0s")
		assert.Contains(t, logs[1], "DLQ_MAX_BYTES not applied")
		assert.Contains(t, logs[1], "nats stream edit DLQ --max-bytes 1048576")
		assert.Contains(t, logs[1], "max_bytes=1048576 stream_max_bytes=2097152")
	})
	t.Run("NoneKept", func(t *testing.T) {
		t.Parallel()
		_, js := smallPayloadServer(t)
		setupWith(t, js, 0, 0)
		cfg, logs := setupWith(t, js, 48*time.Hour, 1<<20)
		assert.Zero(t, cfg.MaxAge)
		assert.Equal(t, int64(-1), cfg.MaxBytes)
		require.Len(t, logs, 2)
		assert.Contains(t, logs[0], "stream_max_age=none")
		assert.Contains(t, logs[0], "--max-age 48h")
		assert.Contains(t, logs[1], "stream_max_bytes=none")
	})
}
