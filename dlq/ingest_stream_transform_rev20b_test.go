package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest20StreamSubjectTransformMovesDeadLettersToAnotherTenant:
// the DLQ stream's subjects are held to the console's (put back when
// edited by hand), but its subject transform is not looked at. A
// transform set on it by hand (nats stream edit DLQ --transform-source
// 'dlq.>' --transform-destination 'dlq.globex.>') makes JetStream store
// acme's dead letter dlq.acme.orders.refund as dlq.globex.acme.orders.refund,
// and ingest, which takes the tenant from the stored subject, files it
// under tenant globex: globex's people read acme's payload, acme's never
// see it. Neither a check's drift nor the row says anything. After the
// console has checked the stream twice since the edit, a dead letter
// published on acme's DLQ subject must be stored under acme.
func TestRevIngest20StreamSubjectTransformMovesDeadLettersToAnotherTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r, _ := b.watched(t, IngestConfig{})
	b.editStream(t, func(c *jetstream.StreamConfig) {
		c.SubjectTransform = &jetstream.SubjectTransformConfig{Source: "dlq.>", Destination: "dlq.globex.>"}
	})
	edited := time.Now()
	checks := 0
	var last time.Time
	wait.Until(t, "two checks of the stream after the edit", time.Minute, func() bool {
		h := r.Health()
		if len(h.Streams) == 1 && h.Streams[0].CheckedAt.After(edited) && !h.Streams[0].CheckedAt.Equal(last) {
			last = h.Streams[0].CheckedAt
			checks++
		}
		return checks >= 2
	})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders.refund", Header: nats.Header{HeaderOriginalSubject: {"app.acme.orders.refund"}},
		Data: []byte(`{"card":"acme-secret"}`)})
	b.waitRows(t, 1)

	got := b.row(t, "payload = $1", []byte(`{"card":"acme-secret"}`))
	drift := r.Health().Streams[0].StreamDrift
	assert.Equal(t, "acme", got.Tenant, "acme's dead letter stored under another tenant (subject %s, flags %v); the stream's drift says %q",
		got.Subject, got.Flags, drift)
	info, err := b.js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	t.Logf("the DLQ stream's transform now: %+v", info.CachedInfo().Config.SubjectTransform)
}
