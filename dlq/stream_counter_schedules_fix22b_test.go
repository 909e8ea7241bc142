package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestStreamMessageCountersReported: a DLQ stream made beforehand (by an
// operator, a controller) with message counters on refuses every dead
// letter that lacks Nats-Incr, which none has. JetStream never changes the
// setting on an existing stream, so the console reports it as drift, with
// the command that makes the stream again.
func TestStreamMessageCountersReported(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createStream(t, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}, AllowMsgCounter: true})
	_, err := b.js.PublishMsg(context.Background(), &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte("poison")})
	require.Error(t, err, "a counter stream refuses a dead letter")

	r, _ := b.watched(t, IngestConfig{})
	wait.Until(t, "the drift reported", time.Minute, func() bool {
		h := r.Health()
		return len(h.Streams) == 1 && strings.Contains(h.Streams[0].StreamDrift, "allow_msg_counter: true → false")
	})
	assert.Contains(t, r.Health().Streams[0].StreamDrift, "nats stream rm DLQ -f")
}

// TestStreamMessageSchedulesReported: a DLQ stream made beforehand with
// message schedules on takes a dead letter carrying Nats-Schedule headers
// (a producer's) as a schedule: when it fires JetStream publishes a copy to
// the target subject, another tenant's here, and deletes the dead letter.
// JetStream never turns schedules off (nor the rollups they need), so the
// console reports both as drift, with the command that makes the stream
// again.
func TestStreamMessageSchedulesReported(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	s := b.createStream(t, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}, AllowMsgSchedules: true})
	publish(t, b.js, &nats.Msg{Subject: "dlq.evil.orders.refund", Data: []byte("moved"), Header: nats.Header{
		"Nats-Schedule":        {"@at " + time.Now().UTC().Format(time.RFC3339)},
		"Nats-Schedule-Target": {"dlq.globex.orders.refund"},
	}})
	wait.Until(t, "the schedule fired", time.Minute, func() bool {
		_, err := s.GetLastMsgForSubject(ctx, "dlq.globex.orders.refund")
		return err == nil
	})
	_, err := s.GetLastMsgForSubject(ctx, "dlq.evil.orders.refund")
	require.ErrorIs(t, err, jetstream.ErrMsgNotFound, "the dead letter as published is gone")

	r, _ := b.watched(t, IngestConfig{})
	wait.Until(t, "the drift reported", time.Minute, func() bool {
		h := r.Health()
		return len(h.Streams) == 1 && strings.Contains(h.Streams[0].StreamDrift, "allow_msg_schedules: true → false")
	})
	drift := r.Health().Streams[0].StreamDrift
	assert.Contains(t, drift, "allow_rollup_hdrs: true → false")
	assert.Contains(t, drift, "nats stream rm DLQ -f")
}
