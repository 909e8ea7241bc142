package dlq

import (
	"strings"
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

// TestRevFixes4aStuckSettingBlocksSubjectRepair: an operator sets discard
// new per subject with a per-subject limit (to keep one tenant from
// filling the stream), and the stream's subjects are narrowed to one
// tenant. The check builds one update that takes the per-subject limit off
// but keeps discard new per subject (left to on-call): JetStream refuses
// it (discard new per subject needs a per-subject limit), so the console's
// subject is never put back either and every other tenant's dead letters
// are refused at every check until on-call switches to discard old (the
// one command the report names, which the console itself refuses to run
// because it may delete dead letters not yet stored). What can be put
// back must be put back even when another change is refused (leave the
// per-subject limit while discard new per subject needs it, or update
// without it).
func TestRevFixes4aStuckSettingBlocksSubjectRepair(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r, _ := b.watched(t, IngestConfig{})
	b.editStream(t, func(c *jetstream.StreamConfig) {
		c.Discard, c.DiscardNewPerSubject, c.MaxMsgsPerSubject = jetstream.DiscardNew, true, 1000
		c.Subjects = []string{"dlq.acme.>"}
	})
	wait.Until(t, "a check reporting the stream", time.Minute, func() bool {
		return r.Health().Streams[0].StreamDrift != ""
	})
	for range 3 {
		checked := r.Health().Streams[0].CheckedAt
		wait.Until(t, "another check", time.Minute, func() bool { return r.Health().Streams[0].CheckedAt.After(checked) })
	}
	drift := r.Health().Streams[0].StreamDrift
	assert.Contains(t, strings.Join(b.streamConfig(t).Subjects, ","), "dlq.>",
		"the console's subject was not put back; drift: %s", drift)
	_, err := b.js.Publish(t.Context(), "dlq.globex.accounts.permission_grant", []byte("refused?"))
	assert.NoError(t, err, "another tenant's dead letter is refused by the stream")
}
