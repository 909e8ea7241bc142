package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestConsumerEditedByHandIsNoticed (review rev-crash): someone narrows
// the ingest consumer's filter by hand (nats consumer edit DLQ
// quarantine-ingest --filter 'dlq.acme.>', "to look at one tenant")
// while the console runs. Ingest sets the consumer's config only at
// Setup (start, a consumer made again, PostgreSQL back), and its health
// check reads the consumer's own pending count, which counts only what
// the filter takes. A dead letter of another tenant is then neither
// stored nor counted as waiting: the dashboard, the lag metric and the
// alerts all say ingest is healthy and caught up, until the stream's age
// limit discards it. Either the console puts its config back, or its
// health says that dead letters wait.
func TestConsumerEditedByHandIsNoticed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{Workers: 1, BatchSize: 10, MaxWait: 10 * time.Millisecond, HealthEvery: 50 * time.Millisecond}, nil)
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("before")})
	b.waitRows(t, 1)

	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	cfg := cons.CachedInfo().Config
	cfg.FilterSubject = "dlq.acme.>"
	_, err = b.js.UpdateConsumer(ctx, "DLQ", cfg)
	require.NoError(t, err)

	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.accounts.permission_grant", Data: []byte("other tenant")})
	checks := func(n int) {
		t.Helper()
		wait.Until(t, "the first health check", time.Minute, func() bool { return len(r.Health().Streams) > 0 })
		for range n {
			last := r.Health().Streams[0].CheckedAt
			wait.Until(t, "a health check", time.Minute, func() bool { return r.Health().Streams[0].CheckedAt.After(last) })
		}
	}
	checks(20) // a second of checks
	stored := countRows(t, b.db.Pool, "payload = 'other tenant'")
	h := r.Health().Streams[0]
	t.Logf("stored=%d waiting=%d lag=%s checkErr=%q", stored, h.Waiting(), h.Lag(time.Now()), h.CheckErr)
	assert.True(t, stored == 1 || h.Waiting() > 0 || h.CheckErr != "",
		"a dead letter the edited consumer never delivers is neither stored nor reported: waiting=%d", h.Waiting())
}
