package dlq

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFix20StreamTransformAndRepublishSetByHandAreTakenOff: a subject
// transform (which files dead letters under another tenant) and a
// republish (which copies every dead letter, any tenant's, to subjects
// whoever may subscribe there reads) set on the DLQ stream by hand are
// taken off by the next check, logged with both values and counted, as
// the stream's subjects are; nothing is left as drift, and a dead letter
// published afterwards is stored under its own tenant.
func TestFix20StreamTransformAndRepublishSetByHandAreTakenOff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r, logs := b.watched(t, IngestConfig{})
	b.editStream(t, func(c *jetstream.StreamConfig) {
		c.SubjectTransform = &jetstream.SubjectTransformConfig{Source: "dlq.>", Destination: "dlq.globex.>"}
		c.RePublish = &jetstream.RePublish{Source: "dlq.>", Destination: "leak.>"}
	})
	wait.Until(t, "the transform and the republish taken off and counted", time.Minute, func() bool {
		c := b.streamConfig(t)
		return c.SubjectTransform == nil && c.RePublish == nil && healthSeries(t, r, "quarantine_dlq_stream_repaired_total") >= 1
	})
	assert.Contains(t, logs.String(), "subject_transform: from dlq.> to dlq.globex.> → none")
	assert.Contains(t, logs.String(), "republish: from dlq.> to leak.> → none")
	assert.Zero(t, healthSeries(t, r, "quarantine_dlq_stream_drift"))

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte("after")})
	b.waitRows(t, 1)
	assert.Equal(t, "acme", b.row(t, "payload = 'after'").Tenant)
}
