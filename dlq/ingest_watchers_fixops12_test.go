package dlq

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// terminatedAdvisory is a MSG_TERMINATED advisory of stream's consumer c1
// for its message seq.
func terminatedAdvisory(stream string, seq int) *nats.Msg {
	adv := `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
		`","stream":"` + stream + `","consumer":"c1","stream_seq":` + strconv.Itoa(seq) + `,"deliveries":2}`
	return &nats.Msg{Subject: AdvisoryTerminated + "." + stream + ".c1", Data: []byte(adv)}
}

// TestFixOps12SweepLeavesAdvisoriesOfOthersStreams: the sweep's path to a
// row for an advisory acked without one judges it as a delivery is
// judged. One of a stream no replica watches (its subjects left on the
// advisory stream) is passed over, counted not_watched, and the
// watermark goes past it: no junk row. One of a stream another running
// replica watches is held for the next sweeps (that replica's sweep may
// store it whole), not stored as junk by this one.
func TestFixOps12SweepLeavesAdvisoriesOfOthersStreams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, m := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	s, err := b.js.Stream(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.Subjects = append(cfg.Subjects, AdvisoryTerminated+".EMAILS.*") // left by a deployment that watched EMAILS
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	publish(t, b.js, terminatedAdvisory("EMAILS", 1))
	b.peek(t, "DLQ_ADVISORIES", 1)
	res, err := in.sweep(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.NotWatched)
	assert.Zero(t, res.Stored)
	assert.Zero(t, countRows(t, b.db.Pool, "true"), "an advisory of a stream nobody watches is no dead letter of ours")
	assert.Equal(t, int64(1), b.sweptTo(t, "DLQ_ADVISORIES"))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.Swept.WithLabelValues("DLQ_ADVISORIES", sweptNotWatched)))

	// Another replica, watching EMAILS too, announces itself.
	ws, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	b.idle(t, IngestConfig{Watch: ws})
	publish(t, b.js, terminatedAdvisory("EMAILS", 2))
	b.peek(t, "DLQ_ADVISORIES", 1)
	res, err = in.sweep(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	assert.Zero(t, res.Stored+res.NotWatched)
	assert.Equal(t, []int64{2}, b.heldOf(t, "DLQ_ADVISORIES"), "held for the replica that watches EMAILS")
	assert.Zero(t, countRows(t, b.db.Pool, "true"))
}

// TestFixOps12SubjectsOfStreamsNobodyWatchesAreTakenOff: a replica's
// check takes off the advisory stream the subjects of streams no running
// replica watches, and only those: not while another replica (on a
// longer list, in a rolling deploy) still watches the stream, nor a
// subject of another shape an operator added.
func TestFixOps12SubjectsOfStreamsNobodyWatchesAreTakenOff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	ws, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	old, _ := b.idle(t, IngestConfig{Watch: ws})
	s, err := b.js.Stream(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.Subjects = append(cfg.Subjects, "ops.audit.>")
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	subjects := func() []string {
		s, err := b.js.Stream(ctx, "DLQ_ADVISORIES")
		require.NoError(t, err)
		return s.CachedInfo().Config.Subjects
	}
	emails := []string{AdvisoryMaxDeliveries + ".EMAILS.*", AdvisoryTerminated + ".EMAILS.*"}

	in.keepWatchers(ctx)
	assert.Subset(t, subjects(), emails, "a running replica still watches EMAILS")

	old.retireWatch() // the last replica on the old list stops
	in.keepWatchers(ctx)
	have := subjects()
	assert.NotContains(t, have, emails[0])
	assert.NotContains(t, have, emails[1])
	assert.Subset(t, have, []string{AdvisoryMaxDeliveries + ".ORDERS.*", AdvisoryTerminated + ".ORDERS.*", "ops.audit.>"})
}
