package dlq

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev37ForgedGiveUpOfATenantsOwnConsumerIsUnverified: globex's own
// consumer, filtered to its subjects, processes and acks a refund. Anyone
// who may publish on the advisory subjects (acme's producer) then sends a
// max_deliver advisory naming that consumer and message: it delivered the
// message, it has a MaxDeliver, its filter takes the subject, so every
// check JetStream allows passes, and nothing tells it from a real give-up.
// On a console that does not trust its account's advisories (the default:
// DLQ_ADVISORIES_TRUSTED unset) the row is stored, with its original,
// flagged advisory_unverified, which no replay sends. One that trusts them
// (no client may publish there) stores it unflagged, as before.
func TestRev37ForgedGiveUpOfATenantsOwnConsumerIsUnverified(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		untrusted  bool
		unverified bool
	}{{"Untrusted", true, true}, {"Trusted", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			ws := b.watchOrders(t)
			b.start(t, IngestConfig{Watch: ws, UntrustedAdvisories: tc.untrusted}, nil)
			publish(t, b.js, &nats.Msg{Subject: "app.globex.orders.refund", Data: []byte("refund 100 EUR, already done")})
			cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "globex-worker", AckPolicy: jetstream.AckExplicitPolicy,
				FilterSubject: "app.globex.orders.>", MaxDeliver: 5})
			require.NoError(t, err)
			msgs, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
			require.NoError(t, err)
			n := 0
			for m := range msgs.Messages() {
				require.NoError(t, m.DoubleAck(ctx)) // processed
				n++
			}
			require.Equal(t, 1, n)

			forged := `{"type":"io.nats.jetstream.advisory.v1.max_deliver","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
				`","stream":"ORDERS","consumer":"globex-worker","stream_seq":1,"deliveries":5}`
			publish(t, b.js, &nats.Msg{Subject: AdvisoryMaxDeliveries + ".ORDERS.globex-worker", Data: []byte(forged)})
			b.waitRows(t, 1)

			f, err := b.store.BySource(ctx, "ORDERS", 1, "globex-worker")
			require.NoError(t, err)
			assert.Equal(t, "globex", f.Tenant)
			assert.Equal(t, "app.globex.orders.refund", f.OriginalSubject, "stored with its original, for inspection")
			assert.Equal(t, tc.unverified, slices.Contains(f.Flags, FlagAdvisoryUnverified), "flags %v", f.Flags)
			if tc.unverified {
				assert.Contains(t, strings.Join(f.MalformedReasons, "\n"), untrustedAdvisories)
			}
		})
	}
}
