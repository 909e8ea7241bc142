package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOps23DemoRewritesAnExistingBusinessStream (review 23f): README
// says `console demo` reads NATS_URL and NATS_TOKEN_FILE, and that "run in
// a console's environment" it must not answer the deploy's real
// revalidation service (so it never reads REVALIDATE_SUBJECT). Run there,
// it connects to the deployment's NATS and, for each of its business
// streams (ORDERS, EMAILS, SEARCH, ANALYTICS, ACCOUNTS: ordinary names),
// calls CreateOrUpdateStream and CreateOrUpdateConsumer
// (dlqdemo.Run): a stream of that name that already exists gets the demo's
// configuration: its subjects replaced by app.*.orders.> (what the
// producers publish on is no longer stored: their publishes fail with no
// responders), its age limit set to 7 days (JetStream deletes every
// message older at once) and its other limits reset; a durable named
// orders-worker gets MaxDeliver 4 and AckWait 5s, and the demo then
// consumes the stream's real messages with its random fates (acks them,
// terminates them, dead-letters them with invented errors). Nothing asks
// or refuses: the demo must not change a stream (or consumer) it did not
// make.
func TestRevOps23DemoRewritesAnExistingBusinessStream(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	ctx := context.Background()
	// A deployment's own ORDERS stream and its worker's durable.
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.FileStorage, MaxAge: 30 * 24 * time.Hour,
	})
	require.NoError(t, err)
	_, err = js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "orders-worker", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 20, AckWait: time.Minute,
	})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "orders.created", []byte(`{"order":1}`))
	require.NoError(t, err)

	// `console demo` in that environment (its NATS_URL, as README says it reads).
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	e := env(map[string]string{"NATS_URL": ns.ClientURL(), "DEMO_RATE": "1"})
	go func() { done <- run(runCtx, []string{"console", "demo"}, e, &out, io.Discard) }()
	var exited bool
	wait.For(t, "the demo to start publishing or to refuse", 30*time.Second, func() error {
		select {
		case <-done:
			exited = true // refused (a fix): nothing to stop
			return nil
		default:
		}
		if !strings.Contains(out.String(), "demo: publishing") {
			return errors.New("not yet: " + out.String())
		}
		return nil
	})
	cancel()
	if !exited {
		<-done
	}

	stream, err := js.Stream(ctx, "ORDERS")
	require.NoError(t, err)
	cfg := stream.CachedInfo().Config
	assert.Equal(t, []string{"orders.>"}, cfg.Subjects, "console demo replaced the subjects of the deployment's ORDERS stream")
	assert.Equal(t, 30*24*time.Hour, cfg.MaxAge, "console demo changed the age limit of the deployment's ORDERS stream")
	cons, err := js.Consumer(ctx, "ORDERS", "orders-worker")
	require.NoError(t, err)
	cc := cons.CachedInfo().Config
	assert.Equal(t, 20, cc.MaxDeliver, "console demo changed the deployment's orders-worker consumer")
	assert.Equal(t, time.Minute, cc.AckWait, "console demo changed the deployment's orders-worker consumer")
	_, err = js.Publish(ctx, "orders.created", []byte(`{"order":2}`))
	assert.NoError(t, err, "the producers' subject is no longer stored by ORDERS after console demo")
}
