package dlq

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// streamConfig reads the DLQ stream's configuration.
func (b *bundle) streamConfig(t *testing.T) jetstream.StreamConfig {
	t.Helper()
	s, err := b.js.Stream(context.Background(), "DLQ")
	require.NoError(t, err)
	return s.CachedInfo().Config
}

// editStream changes the DLQ stream as `nats stream edit` would.
func (b *bundle) editStream(t *testing.T, edit func(*jetstream.StreamConfig)) {
	t.Helper()
	cfg := b.streamConfig(t)
	edit(&cfg)
	_, err := b.js.UpdateStream(context.Background(), cfg)
	require.NoError(t, err)
}

// healthSeries is the value of the DLQ stream's series name that r's
// health collector exports; 0 when it exports none.
func healthSeries(t *testing.T, r *running, name string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(newHealthCollector(r.metrics.health))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stream" && l.GetValue() == "DLQ" {
					return m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

// watchLog is a log a test reads while the ingester writes it.
type watchLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *watchLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *watchLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// watched starts an ingester that checks every 50ms, logging into the
// buffer returned, and waits for its first check.
func (b *bundle) watched(t *testing.T, cfg IngestConfig) (*running, *watchLog) {
	t.Helper()
	logs := &watchLog{}
	b.log = slog.New(slog.NewTextHandler(logs, nil))
	cfg.Workers, cfg.BatchSize, cfg.MaxWait, cfg.HealthEvery = 1, 10, 10*time.Millisecond, 50*time.Millisecond
	r := b.start(t, cfg, nil)
	wait.Until(t, "the first check", time.Minute, func() bool {
		h := r.Health()
		return len(h.Streams) == 1 && h.Streams[0].CheckErr == "" && !h.Streams[0].CheckedAt.IsZero()
	})
	return r, logs
}

// TestStreamSubjectRemovedByHandIsPutBack: the DLQ stream narrowed by hand
// to one tenant's subjects refuses every other tenant's dead letters. The
// next check puts the console's subject back (the tenant's, which it
// covers, goes: JetStream refuses overlapping subjects), logs the change
// with both values and counts it, and a dead letter published on a subject
// the edit had removed is stored.
func TestStreamSubjectRemovedByHandIsPutBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r, logs := b.watched(t, IngestConfig{})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("before")})
	b.waitRows(t, 1)

	b.editStream(t, func(c *jetstream.StreamConfig) { c.Subjects = []string{"dlq.acme.>"} })
	wait.Until(t, "the console's subject put back and counted", time.Minute, func() bool {
		return slices.Equal(b.streamConfig(t).Subjects, []string{"dlq.>"}) &&
			healthSeries(t, r, "quarantine_dlq_stream_repaired_total") >= 1
	})
	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.accounts.permission_grant", Data: []byte("after")})
	b.waitRows(t, 2)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'after'"))
	assert.Contains(t, logs.String(), "subjects: dlq.acme.> → dlq.>")
	assert.Zero(t, healthSeries(t, r, "quarantine_dlq_stream_drift"))
}

// TestStreamDeletedByHandIsMadeAgain: a DLQ stream deleted by hand is
// made again, with the console's settings, by the replica that misses it;
// that is logged and counted, and dead letters published afterwards are
// stored.
func TestStreamDeletedByHandIsMadeAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r, logs := b.watched(t, IngestConfig{StreamMaxAge: time.Hour})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("before")})
	b.waitRows(t, 1)
	s, err := b.js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	created := s.CachedInfo().Created

	require.NoError(t, b.js.DeleteStream(ctx, "DLQ"))
	wait.Until(t, "the stream and its consumer made again", time.Minute, func() bool {
		s, err := b.js.Stream(ctx, "DLQ")
		if err != nil || s.CachedInfo().Created.Equal(created) {
			return false
		}
		_, err = b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
		return err == nil
	})
	cfg := b.streamConfig(t)
	assert.Equal(t, []string{"dlq.>"}, cfg.Subjects)
	assert.Equal(t, time.Hour, cfg.MaxAge)
	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.accounts.permission_grant", Data: []byte("after")})
	b.waitRows(t, 2)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'after'"))
	assert.Equal(t, 1.0, healthSeries(t, r, "quarantine_dlq_stream_repaired_total"))
	assert.Contains(t, logs.String(), "was gone (deleted by hand?)")
}

// TestStreamLimitLoweredByHandIsRaisedBack: a limit lowered by hand below
// the console's setting (JetStream discards the oldest dead letters past
// it, stored or not) is raised back by the next check, logged with both
// values and counted; a count or size limit the console never sets is
// taken off. A limit raised by hand above the console's is left as it is:
// limits are only raised, so replicas with other settings never fight.
func TestStreamLimitLoweredByHandIsRaisedBack(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		edit func(*jetstream.StreamConfig)
		want func(jetstream.StreamConfig) bool
		log  string
	}{
		"MaxAge": {
			edit: func(c *jetstream.StreamConfig) { c.MaxAge = 3 * time.Minute },
			want: func(c jetstream.StreamConfig) bool { return c.MaxAge == time.Hour },
			log:  "max_age: 3m0s → 1h0m0s",
		},
		"MaxBytes": {
			edit: func(c *jetstream.StreamConfig) { c.MaxBytes = 1 << 20 },
			want: func(c jetstream.StreamConfig) bool { return c.MaxBytes == 64<<20 },
			log:  "max_bytes: 1048576 → 67108864",
		},
		"MaxMsgs": {
			edit: func(c *jetstream.StreamConfig) { c.MaxMsgs = 5 },
			want: func(c jetstream.StreamConfig) bool { return c.MaxMsgs == -1 },
			log:  "max_msgs: 5 → none",
		},
		"MaxMsgSize": {
			edit: func(c *jetstream.StreamConfig) { c.MaxMsgSize = 1024 },
			want: func(c jetstream.StreamConfig) bool { return c.MaxMsgSize == -1 },
			log:  "max_msg_size: 1024 → none",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			r, logs := b.watched(t, IngestConfig{StreamMaxAge: time.Hour, StreamMaxBytes: 64 << 20})
			b.editStream(t, c.edit)
			wait.Until(t, "the limit raised back and counted", time.Minute, func() bool {
				return c.want(b.streamConfig(t)) && healthSeries(t, r, "quarantine_dlq_stream_repaired_total") >= 1
			})
			assert.Contains(t, logs.String(), c.log)
		})
	}
	t.Run("HigherLeftAlone", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r, _ := b.watched(t, IngestConfig{StreamMaxAge: time.Hour, StreamMaxBytes: 64 << 20})
		b.editStream(t, func(c *jetstream.StreamConfig) { c.MaxAge, c.MaxBytes = 2*time.Hour, 128<<20 })
		for range 5 {
			checked := r.Health().Streams[0].CheckedAt
			wait.Until(t, "another check", time.Minute, func() bool { return r.Health().Streams[0].CheckedAt.After(checked) })
		}
		cfg := b.streamConfig(t)
		assert.Equal(t, 2*time.Hour, cfg.MaxAge)
		assert.Equal(t, int64(128<<20), cfg.MaxBytes)
		assert.Zero(t, healthSeries(t, r, "quarantine_dlq_stream_repaired_total"))
	})
}

// TestStreamChangedUnfixablyIsReported: a discard policy changed by hand
// to refuse new dead letters once the stream is full is not put back by
// the console (discarding the oldest instead may lose dead letters not
// yet stored): it is reported at once, in health, the dashboard's
// sentences and a gauge, with the command that puts it back, until
// someone does.
func TestStreamChangedUnfixablyIsReported(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r, _ := b.watched(t, IngestConfig{})
	b.editStream(t, func(c *jetstream.StreamConfig) { c.Discard = jetstream.DiscardNew })
	wait.Until(t, "the drift reported", time.Minute, func() bool { return healthSeries(t, r, "quarantine_dlq_stream_drift") == 1 })
	stalled := strings.Join(r.Health().Stalled(time.Now()), "\n")
	assert.Contains(t, stalled, "discard: new → old")
	assert.Contains(t, stalled, "nats stream edit DLQ --discard old")
	assert.Equal(t, jetstream.DiscardNew, b.streamConfig(t).Discard, "left as it was")
	assert.Zero(t, healthSeries(t, r, "quarantine_dlq_stream_repaired_total"))

	b.editStream(t, func(c *jetstream.StreamConfig) { c.Discard = jetstream.DiscardOld })
	wait.Until(t, "the drift gone once put back", time.Minute, func() bool { return healthSeries(t, r, "quarantine_dlq_stream_drift") == 0 })
	assert.Empty(t, r.Health().Stalled(time.Now()))
}

// TestSubjectCovers: a subject pattern covers another when every subject
// the other matches it matches too.
func TestSubjectCovers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, subject string
		want             bool
	}{
		{"dlq.>", "dlq.acme.>", true},
		{"dlq.>", "dlq.acme", true},
		{"dlq.>", "dlq", false},
		{"dlq.>", "dlq.>", true},
		{"dlq.>", "other.acme.>", false},
		{"dlq.*.>", "dlq.acme.orders", true},
		{"dlq.*.>", "dlq.>", false},
		{"dlq.*", "dlq.acme", true},
		{"dlq.*", "dlq.*", true},
		{"dlq.*", "dlq.acme.orders", false},
		{"dlq.acme.>", "dlq.>", false},
		{"dlq.acme", "dlq.acme", true},
	} {
		assert.Equal(t, c.want, subjectCovers(c.pattern, c.subject), "%s covers %s", c.pattern, c.subject)
	}
}

// TestStreamEditDuringCheckIsKept: on-call raises the stream's age limit
// (the runbook's DeadLetterStreamNearLimit) after a check read the stream
// and before it put the console's subject back. The update is made from
// the stream as it is then, so it puts the subject back and keeps the
// raised limit instead of setting the one it read.
func TestStreamEditDuringCheckIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// The monitor checks once when Run starts; the test checks by hand after.
	a := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: time.Hour, StreamMaxAge: time.Hour}, nil)
	wait.Until(t, "the first check", time.Minute, func() bool { return len(a.Health().Streams) == 1 })

	b.editStream(t, func(c *jetstream.StreamConfig) { c.Subjects = []string{"dlq.acme.>"} })
	edited := false
	a.beforeStreamUpdate = func() {
		if !edited {
			edited = true
			b.editStream(t, func(c *jetstream.StreamConfig) { c.MaxAge = 48 * time.Hour })
		}
	}
	a.check(ctx, "DLQ")
	require.True(t, edited, "the check found the subject removed and reached the update")
	cfg := b.streamConfig(t)
	assert.Equal(t, []string{"dlq.>"}, cfg.Subjects, "the console's subject put back")
	assert.Equal(t, 48*time.Hour, cfg.MaxAge, "on-call's raised limit kept")
	assert.Equal(t, 48*time.Hour, a.Health().Streams[0].MaxAge, "health shows the stream as it now is")
}

// TestStreamCountLimitOnlyBoundIsReported: a message count limit on a
// stream the console sets no age or size limit on may be its only bound:
// it is left, and reported with what to run, until the stream has one.
func TestStreamCountLimitOnlyBoundIsReported(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r, _ := b.watched(t, IngestConfig{})
	b.editStream(t, func(c *jetstream.StreamConfig) { c.MaxMsgs = 1_000_000 })
	wait.Until(t, "the drift reported", time.Minute, func() bool { return healthSeries(t, r, "quarantine_dlq_stream_drift") == 1 })
	stalled := strings.Join(r.Health().Stalled(time.Now()), "\n")
	assert.Contains(t, stalled, "max_msgs: 1000000 → none")
	assert.Contains(t, stalled, "nats stream edit DLQ --max-age AGE or --max-bytes SIZE")
	assert.Equal(t, int64(1_000_000), b.streamConfig(t).MaxMsgs, "left as it was")
	assert.Zero(t, healthSeries(t, r, "quarantine_dlq_stream_repaired_total"))
}

// TestStreamCountLimitTakenOffAtSetupIsCounted: a console starting with an
// age limit takes a message count limit off the stream it finds; that is
// logged as a warning and counted, not only logged for information.
func TestStreamCountLimitTakenOffAtSetupIsCounted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, _ := b.watched(t, IngestConfig{StreamMaxAge: time.Hour})
	first.stop()
	b.editStream(t, func(c *jetstream.StreamConfig) { c.MaxMsgs = 1_000_000 })
	r, logs := b.watched(t, IngestConfig{StreamMaxAge: time.Hour})
	assert.Equal(t, int64(-1), b.streamConfig(t).MaxMsgs)
	assert.Equal(t, 1.0, healthSeries(t, r, "quarantine_dlq_stream_repaired_total"))
	assert.Contains(t, logs.String(), "level=WARN msg=\"updated stream: took off limits")
	assert.Contains(t, logs.String(), "max_msgs: 1000000 → none")
}
