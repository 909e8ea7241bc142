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

	"github.com/quarantine-console/quarantine/dlq/dlqdemo"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// demoUntilPublishing runs `console demo` against natsURL until it says it
// is publishing, then stops it; it returns the demo's error when it exited
// before that (a refusal), nil otherwise.
func demoUntilPublishing(t *testing.T, natsURL string, flags ...string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	e := env(map[string]string{"NATS_URL": natsURL, "DEMO_RATE": "1"})
	go func() { done <- run(ctx, append([]string{"console", "demo"}, flags...), e, &out, io.Discard) }()
	var exited error
	wait.For(t, "the demo to start publishing or to exit", 30*time.Second, func() error {
		select {
		case err := <-done:
			exited = errors.Join(errors.New("demo exited"), err)
			return nil
		default:
		}
		if !strings.Contains(out.String(), "demo: publishing") {
			return errors.New("not yet: " + out.String())
		}
		return nil
	})
	if exited != nil {
		return exited
	}
	cancel()
	require.NoError(t, <-done)
	return nil
}

// TestDemoMarksWhatItMakesAndRunsAgainOnIt: on a NATS server of its own the
// demo makes its streams and consumers marked as its own, and a second run
// (make run started again on its store) updates them instead of refusing.
func TestDemoMarksWhatItMakesAndRunsAgainOnIt(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	ctx := context.Background()
	require.NoError(t, demoUntilPublishing(t, ns.ClientURL()))
	for _, s := range dlqdemo.Streams {
		st, err := js.Stream(ctx, s.Name)
		require.NoError(t, err)
		assert.Equal(t, "1", st.CachedInfo().Config.Metadata[dlqdemo.MarkKey], "stream %s", s.Name)
		c, err := st.Consumer(ctx, strings.ToLower(s.Name)+"-worker")
		require.NoError(t, err)
		assert.Equal(t, "1", c.CachedInfo().Config.Metadata[dlqdemo.MarkKey], "consumer of %s", s.Name)
	}
	require.NoError(t, demoUntilPublishing(t, ns.ClientURL()), "the demo refuses what it made itself")
}

// TestDemoRefusesWhatItDidNotMake: a consumer of the demo's name on its own
// stream, or a stream of one of its names, made by someone else is refused,
// named, and left as it was; nothing is made or changed before the refusal.
func TestDemoRefusesWhatItDidNotMake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Consumer", func(t *testing.T) {
		t.Parallel()
		ns := natstest.Start(t)
		_, js := ns.Connect(t)
		require.NoError(t, demoUntilPublishing(t, ns.ClientURL()))
		require.NoError(t, js.DeleteConsumer(ctx, "EMAILS", "emails-worker"))
		_, err := js.CreateConsumer(ctx, "EMAILS", jetstream.ConsumerConfig{
			Durable: "emails-worker", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 20,
		})
		require.NoError(t, err)

		err = demoUntilPublishing(t, ns.ClientURL())
		require.ErrorIs(t, err, dlqdemo.ErrNotTheDemos)
		assert.ErrorContains(t, err, "consumer emails-worker on stream EMAILS")
		assert.ErrorContains(t, err, "NATS server of its own")
		c, err := js.Consumer(ctx, "EMAILS", "emails-worker")
		require.NoError(t, err)
		assert.Equal(t, 20, c.CachedInfo().Config.MaxDeliver)
	})

	t.Run("Stream", func(t *testing.T) {
		t.Parallel()
		ns := natstest.Start(t)
		_, js := ns.Connect(t)
		last := dlqdemo.Streams[len(dlqdemo.Streams)-1]
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: last.Name, Subjects: []string{"accounts.>"}})
		require.NoError(t, err)

		err = demoUntilPublishing(t, ns.ClientURL())
		require.ErrorIs(t, err, dlqdemo.ErrNotTheDemos)
		assert.ErrorContains(t, err, "stream "+last.Name)
		_, err = js.Stream(ctx, dlqdemo.Streams[0].Name)
		assert.ErrorIs(t, err, jetstream.ErrStreamNotFound, "the demo made streams before it refused")
	})
}

// TestDemoRowsRefusesADatabaseOfRealDeadLetters: `console demo --rows`
// fills an empty database, and one of fills alone, but refuses one that
// holds a dead letter it did not write, and leaves it as it was.
func TestDemoRowsRefusesADatabaseOfRealDeadLetters(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	fill := func() error {
		return run(ctx, []string{"console", "demo", "--rows", "50"}, env(map[string]string{"MIGRATE_DATABASE_URL": db.OwnerURL}), io.Discard, io.Discard)
	}
	count := func() int {
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&n))
		return n
	}
	require.NoError(t, fill(), "an empty database")
	require.NoError(t, fill(), "a database of fills")
	require.Equal(t, 100, count())

	testfactory.DeadLetter(t, db.Pool, testfactory.Letter{})
	err := fill()
	require.ErrorIs(t, err, dlqdemo.ErrRealDeadLetters)
	assert.ErrorContains(t, err, "MIGRATE_DATABASE_URL")
	assert.Equal(t, 101, count())
}

// TestDemoTakesOverUnmarkedOnlyWhenTold: a store an older demo made before
// it marked what it made (make run's .data/nats) is refused as any
// unmarked stream is, unless --take-over-unmarked, which sets the streams
// and consumers up as the demo's, marked, so that the next run needs it no
// more.
func TestDemoTakesOverUnmarkedOnlyWhenTold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	for _, s := range dlqdemo.Streams {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: s.Name, Subjects: []string{s.Subject}, Storage: jetstream.FileStorage})
		require.NoError(t, err)
		_, err = js.CreateConsumer(ctx, s.Name, jetstream.ConsumerConfig{Durable: strings.ToLower(s.Name) + "-worker", AckPolicy: jetstream.AckExplicitPolicy})
		require.NoError(t, err)
	}
	require.ErrorIs(t, demoUntilPublishing(t, ns.ClientURL()), dlqdemo.ErrNotTheDemos)

	require.NoError(t, demoUntilPublishing(t, ns.ClientURL(), "--take-over-unmarked"))
	for _, s := range dlqdemo.Streams {
		st, err := js.Stream(ctx, s.Name)
		require.NoError(t, err)
		assert.Equal(t, "1", st.CachedInfo().Config.Metadata[dlqdemo.MarkKey], "stream %s marked", s.Name)
		c, err := st.Consumer(ctx, strings.ToLower(s.Name)+"-worker")
		require.NoError(t, err)
		assert.Equal(t, "1", c.CachedInfo().Config.Metadata[dlqdemo.MarkKey], "consumer of %s marked", s.Name)
	}
	require.NoError(t, demoUntilPublishing(t, ns.ClientURL()), "marked now: no take-over needed")
}
