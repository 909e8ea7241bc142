package dlq_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestRevOps26StreamLimitWarningsComeAtHalfTheLimit: the dashboard's
// "near its limits" warning (IngestHealth.LimitWarnings) must come once
// the dead letters not yet stored take LimitWarnAt, half, of a stream
// limit, and count every one of them, the delivered and not acked ones
// too: past the limit JetStream discards them, stored or not, so a
// warning that waited for the whole limit, or counted only those never
// delivered, would come after the loss.
func TestRevOps26StreamLimitWarningsComeAtHalfTheLimit(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	// 100 messages of 100 bytes each in the stream.
	base := dlq.StreamHealth{Stream: "DLQ", Msgs: 100, Bytes: 10_000}
	cases := []struct {
		name  string
		s     func(s dlq.StreamHealth) dlq.StreamHealth
		warns []string // what each warning names; none when nil
	}{
		{"BytesBelowHalf", func(s dlq.StreamHealth) dlq.StreamHealth {
			s.MaxBytes, s.Pending = 10_000, 49 // 4,900 of 10,000 bytes
			return s
		}, nil},
		{"BytesAtHalf", func(s dlq.StreamHealth) dlq.StreamHealth {
			s.MaxBytes, s.Pending = 10_000, 50
			return s
		}, []string{"about 50% of the stream's size limit (10000 bytes)"}},
		{"BytesAtHalfCountingTheUnacked", func(s dlq.StreamHealth) dlq.StreamHealth {
			s.MaxBytes, s.Pending, s.Unacked = 10_000, 20, 40 // 60 waiting: 6,000 bytes
			return s
		}, []string{"about 60% of the stream's size limit (10000 bytes)"}},
		{"AgeBelowHalf", func(s dlq.StreamHealth) dlq.StreamHealth {
			s.MaxAge, s.Pending, s.OldestAt = time.Hour, 1, now.Add(-29*time.Minute)
			return s
		}, nil},
		{"AgeAtHalf", func(s dlq.StreamHealth) dlq.StreamHealth {
			s.MaxAge, s.Pending, s.OldestAt = time.Hour, 1, now.Add(-30*time.Minute)
			return s
		}, []string{"is 30m0s old, 50% of the stream's age limit (1h0m0s)"}},
		{"NoLimits", func(s dlq.StreamHealth) dlq.StreamHealth {
			s.Pending, s.OldestAt = 100, now.Add(-24*time.Hour)
			return s
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := dlq.IngestHealth{Streams: []dlq.StreamHealth{tc.s(base)}}
			got := h.LimitWarnings(now)
			if tc.warns == nil {
				assert.Empty(t, got)
				return
			}
			if assert.Len(t, got, len(tc.warns), "%q", got) {
				for i, w := range tc.warns {
					assert.Contains(t, got[i], "DLQ: ")
					assert.Contains(t, got[i], w)
				}
			}
		})
	}
}
