package dlq

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevFixes4aOnlyBoundNotTakenOff: a DLQ stream bounded only by a
// message count (set by an operator before this release, or by a
// controller such as NACK/terraform), with consoles on the default
// DLQ_MAX_AGE/DLQ_MAX_BYTES (0), has its only bound taken off by the
// check: the stream then grows without any limit until the JetStream
// server's disk is full, and every stream on that server stops taking
// messages. Taking a limit off "discards nothing", but it must not leave
// the stream unbounded: a count limit that is the stream's only bound
// should be reported (or left), not removed.
func TestRevFixes4aOnlyBoundNotTakenOff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r, _ := b.watched(t, IngestConfig{})
	b.editStream(t, func(c *jetstream.StreamConfig) { c.MaxMsgs = 1_000_000 })
	for range 3 {
		checked := r.Health().Streams[0].CheckedAt
		wait.Until(t, "another check", time.Minute, func() bool { return r.Health().Streams[0].CheckedAt.After(checked) })
	}
	cfg := b.streamConfig(t)
	assert.True(t, cfg.MaxMsgs > 0 || cfg.MaxBytes > 0 || cfg.MaxAge > 0,
		"the stream's only bound was taken off: max_msgs %d, max_bytes %d, max_age %s", cfg.MaxMsgs, cfg.MaxBytes, cfg.MaxAge)
}
