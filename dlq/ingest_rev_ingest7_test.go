package dlq

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest7AdvisoryStreamAgeLimitLoweredByHandIsLeft: severity medium.
//
// DLQ_ADVISORIES exists so that give-ups raised while the console is down
// or behind are kept (docs/header-contract.md); the console makes it with
// a 30-day age limit, and docs/runbook.md (DeadLetterStreamChanged) says
// the check compares it, as the DLQ stream, with the console's settings
// and puts back "an age or size limit lowered". It does not: keepStream
// judges the advisory stream with limits=false (wantedStream), so its
// max_age (and max_bytes) are never compared. An operator who lowers it
// by hand (nats stream edit DLQ_ADVISORIES --max-age 1s ...) gets neither a
// repair nor a drift report, and every advisory captured while the
// console is down or behind for longer than that is deleted unstored: the
// give-up is lost for good (the sweep finds it deleted; the original
// stays in its stream unlooked-at). Expected: the age limit put back to
// the console's 30 days (or at least reported as drift), and the give-up
// stored after the outage.
func TestRevIngest7AdvisoryStreamAgeLimitLoweredByHandIsLeft(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	logs := &watchLog{}
	b.log = slog.New(slog.NewTextHandler(logs, nil))
	cfg := IngestConfig{Watch: ws, HealthEvery: 50 * time.Millisecond}
	r := b.start(t, cfg, nil)
	advisories := func() jetstream.Stream {
		s, err := b.js.Stream(ctx, "DLQ_ADVISORIES")
		require.NoError(t, err)
		return s
	}
	const consoleAge = 30 * 24 * time.Hour
	sc := advisories().CachedInfo().Config
	require.Equal(t, consoleAge, sc.MaxAge, "the console makes it with a 30-day age limit")

	// On-call lowers it by hand (JetStream wants the duplicate window
	// within it: nats stream edit DLQ_ADVISORIES --max-age 1s --dupe-window 1s).
	sc.MaxAge, sc.Duplicates = time.Second, time.Second
	_, err := b.js.UpdateStream(ctx, sc)
	require.NoError(t, err)
	edited := time.Now()
	advHealth := func() StreamHealth {
		for _, s := range r.Health().Streams {
			if s.Stream == "DLQ_ADVISORIES" {
				return s
			}
		}
		return StreamHealth{}
	}
	for range 5 { // five checks of the advisory stream after the edit
		since := time.Now()
		wait.Until(t, "a check of DLQ_ADVISORIES", time.Minute, func() bool {
			h := advHealth()
			return h.CheckedAt.After(since) && h.CheckedAt.After(edited)
		})
	}
	h := advHealth()
	age := advisories().CachedInfo().Config.MaxAge
	t.Logf("after 5 checks: DLQ_ADVISORIES max_age %s, drift %q, check error %q", age, h.StreamDrift, h.CheckErr)
	assert.True(t, age == consoleAge || h.StreamDrift != "",
		"an age limit lowered by hand on DLQ_ADVISORIES is neither put back nor reported (max_age %s)", age)

	// What it costs: the console is down for a moment, a consumer gives up
	// on an order meanwhile, and the advisory goes before the console is back.
	r.stop()
	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("POISON refund 1")})
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	failingWorker(t, cons, 1, true)
	wait.Until(t, "the advisory captured", time.Minute, func() bool {
		info, err := advisories().Info(ctx)
		require.NoError(t, err)
		return info.State.LastSeq > 0
	})
	if advisories().CachedInfo().Config.MaxAge < consoleAge {
		wait.Until(t, "the advisory gone by the age limit", time.Minute, func() bool {
			info, err := advisories().Info(ctx)
			require.NoError(t, err)
			return info.State.Msgs == 0
		})
	}
	r = b.start(t, cfg, nil)
	restarted := time.Now()
	wait.Until(t, "the advisory consumer caught up", time.Minute, func() bool {
		h := advHealth()
		return h.CheckedAt.After(restarted) && h.CheckErr == "" && h.Pending == 0 && h.Unacked == 0
	})
	assert.Equal(t, 1, countRows(t, b.db.Pool, "source_kind = 'advisory'"),
		"the give-up raised while the console was down is stored (it was lost with its advisory)")
}
