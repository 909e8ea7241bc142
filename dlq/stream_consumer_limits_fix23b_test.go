package dlq

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestStreamConsumerLimitsReported: a DLQ stream made beforehand with
// consumer limits caps what every consumer of it may ask for, and JetStream
// gives one that asks for none the limit itself: an inactive threshold
// below the 30 s the console's reads ask for makes the ingest consumer one
// deleted once no console has pulled for that long; a max ack pending
// below the ingest consumer's makes JetStream refuse to make it. The
// check reports both as drift, with what to run; it does not take them
// off (they may be an operator's for other consumers).
func TestStreamConsumerLimitsReported(t *testing.T) {
	t.Parallel()

	t.Run("InactiveThresholdBelowTheReadsReported", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.createStream(t, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"},
			ConsumerLimits: jetstream.StreamConsumerLimits{InactiveThreshold: 20 * time.Second}})
		r, logs := b.watched(t, IngestConfig{})
		wait.Until(t, "the drift reported", time.Minute, func() bool {
			h := r.Health()
			return len(h.Streams) == 1 && strings.Contains(h.Streams[0].StreamDrift, "consumer_limits.inactive_threshold: 20s → none, or at least 30s")
		})
		assert.Contains(t, r.Health().Streams[0].StreamDrift, "nats stream edit DLQ -i, consumer_limits")
		assert.NotContains(t, r.Health().Streams[0].StreamDrift, "max_ack_pending")
		// JetStream gave the ingest consumer, which asks for none, the
		// limit as its inactive threshold: not a hand edit to put back
		// at every check (it comes back at once).
		reported := r.Health().Streams[0].CheckedAt
		wait.Until(t, "two checks more", time.Minute, func() bool {
			return r.Health().Streams[0].CheckedAt.After(reported.Add(50 * time.Millisecond)) // HealthEvery of watched
		})
		assert.NotContains(t, logs.String(), "the ingest consumer's settings were changed")
	})

	t.Run("ReportedOnlyBelowTheFloors", func(t *testing.T) {
		t.Parallel()
		// A max ack pending below the ingest consumer's cannot be set
		// on one server while the consumer exists (JetStream refuses
		// it), and a stream made with it refuses the consumer, so that
		// the console does not start (serve or worker does not start);
		// a consoles' raised INGEST_BATCH_SIZE meets it too. Judged here
		// as the check judges it.
		want := jetstream.StreamConfig{Name: "DLQ", ConsumerLimits: jetstream.StreamConsumerLimits{InactiveThreshold: storedReadIdle, MaxAckPending: 200}}
		for _, tc := range []struct {
			name   string
			limits jetstream.StreamConsumerLimits
			stuck  []string
		}{
			{"None", jetstream.StreamConsumerLimits{}, nil},
			{"AtTheFloors", jetstream.StreamConsumerLimits{InactiveThreshold: storedReadIdle, MaxAckPending: 200}, nil},
			{"Above", jetstream.StreamConsumerLimits{InactiveThreshold: time.Hour, MaxAckPending: 1000}, nil},
			{"Below", jetstream.StreamConsumerLimits{InactiveThreshold: time.Second, MaxAckPending: 100}, []string{
				"consumer_limits.inactive_threshold: 1s → none, or at least 30s",
				"consumer_limits.max_ack_pending: 100 → none, or at least 200",
			}},
		} {
			have := want
			have.ConsumerLimits = tc.limits
			d := streamDriftOf(have, want, "quarantine-ingest", false)
			assert.Equal(t, tc.stuck, d.stuck, tc.name)
			assert.Empty(t, d.fixable, "%s: never put back by the console", tc.name)
			if tc.stuck != nil {
				assert.Len(t, d.fixes, 1, "%s: one command for both", tc.name)
				assert.Contains(t, d.fixes[0], "nats stream edit DLQ -i", tc.name)
				assert.Contains(t, d.fixes[0], "nats consumer info DLQ quarantine-ingest", tc.name)
			}
		}
	})
}
