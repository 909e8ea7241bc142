package web

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestIngestLagViewScoped: a reader of some tenants is told whether ingest
// is up to date, behind or stalled and which stream limit the backlog
// nears, never how many dead letters wait, since when, or how near the
// limit they are; a reader of every tenant is told all of it.
func TestIngestLagViewScoped(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	behind := dlq.StreamHealth{Stream: "DLQ", CheckedAt: now.Add(-time.Second), Pending: 1234, OldestAt: now.Add(-7 * time.Minute),
		ProgressAt: now.Add(-5 * time.Minute), MaxAge: 10 * time.Minute, MaxBytes: 1 << 20, Msgs: 1234, Bytes: 1 << 20}
	h := dlq.IngestHealth{Streams: []dlq.StreamHealth{behind}, StallAfter: time.Hour}

	t.Run("Behind", func(t *testing.T) {
		all := ingestLagView(h, now, true)
		assert.EqualValues(t, 1234, all.Waiting)
		assert.Equal(t, behind.OldestAt, all.Oldest)
		assert.True(t, all.Behind)
		some := ingestLagView(h, now, false)
		assert.True(t, some.Scoped)
		assert.True(t, some.Behind, "behind is said")
		assert.Zero(t, some.Waiting, "how many wait is every tenant's volume")
		assert.True(t, some.Oldest.IsZero(), "since when is every tenant's volume")
		assert.Equal(t, []string{
			"DLQ: dead letters not yet stored near the stream's age limit (10m0s); past it JetStream discards them",
			"DLQ: dead letters not yet stored near the stream's size limit (1048576 bytes); past it JetStream discards the oldest",
		}, some.Limits, "which limit, not how near")
		assert.Len(t, all.Limits, 2)
		assert.Contains(t, all.Limits[0], "70%")
	})
	t.Run("Stalled", func(t *testing.T) {
		h := h
		h.StallAfter = time.Minute
		h.Streams = []dlq.StreamHealth{behind, {Stream: "DLQ_ADVISORIES", CheckedAt: now, Pending: 1, OldestAt: now.Add(-3 * time.Minute),
			ProgressAt: now.Add(-3 * time.Minute), StreamDrift: "max_age 1h (the console's: 0)"}}
		assert.Regexp(t, `1234 dead letters wait`, strings.Join(ingestLagView(h, now, true).Stalled, "\n"))
		assert.Equal(t, []string{
			"no dead letter has been stored for a while though some wait; the newest may be missing from the list",
			"the DLQ stream's or its ingest consumer's settings were changed by hand, so dead letters may not be stored",
		}, ingestLagView(h, now, false).Stalled, "once each, with no count, age or setting")
	})
	t.Run("UpToDate", func(t *testing.T) {
		h := dlq.IngestHealth{Streams: []dlq.StreamHealth{{Stream: "DLQ", CheckedAt: now, Pending: 2, OldestAt: now.Add(-time.Second),
			ProgressAt: now}}}
		some := ingestLagView(h, now, false)
		assert.True(t, some.Known)
		assert.False(t, some.Behind)
		assert.Empty(t, some.Stalled)
		assert.Zero(t, some.Waiting)
	})
}
