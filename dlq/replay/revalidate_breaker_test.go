package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevalidateCutShortIsNotAServiceFailure: the breaker of a process's
// revalidator counts the owning service's failures. A question cut short
// by the asker (its worker stops, its claim's deadline passed) says
// nothing about the service: however many there are, the breaker stays
// closed and the next question is asked and answered.
func TestRevalidateCutShortIsNotAServiceFailure(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	nc, _ := ns.Connect(t)
	sub, err := nc.Subscribe("revalidate.cut", func(m *nats.Msg) { _ = m.Respond([]byte(`{"allow": true}`)) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, nc.Flush())
	reval := replay.NewNATSRevalidator(nc, "revalidate.cut", time.Minute)

	stopped, stop := context.WithCancel(context.Background())
	stop()
	late, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for i := range 6 {
		for _, ctx := range []context.Context{stopped, late} {
			_, _, err := reval.Revalidate(ctx, replay.RevalidateQuery{Tenant: "acme"})
			require.Error(t, err, "question %d cut short", i)
			require.NotContains(t, err.Error(), "circuit open", "question %d", i)
		}
	}
	allow, _, err := reval.Revalidate(context.Background(), replay.RevalidateQuery{Tenant: "acme"})
	require.NoError(t, err, "the service answers; nothing it did opened the breaker")
	assert.True(t, allow)
}
