package dlq

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevIngest14AdoptedAdvisoryStreamRefusesALaterShrink: a deployment
// with its own DLQ_STREAM that watched ORDERS and EMAILS keeps consuming
// DLQ_ADVISORIES after the upgrade (adoptLegacyAdvisoryStream). README
// "Upgrades" says to change DLQ_WATCH_STREAMS "in a deploy of its own
// after the upgrade": that deploy takes EMAILS off. Every console of the
// new list then refuses to start (Setup: "another deployment on this NATS
// account shares it"), however long after the upgrade, and keeps refusing
// once every replica of the old list is gone: no running replica takes
// EMAILS' subjects off DLQ_ADVISORIES (the old ones watch EMAILS; the new
// ones never run). The subjects it calls "another deployment's" are this
// deployment's own, announced in its own ingest_watchers until the old
// replicas stopped. A console that exits at start ingests nothing, web
// included.
func TestRevIngest14AdoptedAdvisoryStreamRefusesALaterShrink(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.*.send.>"}})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	// Before the upgrade: the deployment's advisory stream is
	// DLQ_ADVISORIES, capturing both watched streams.
	both, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	old := NewIngester(IngestConfig{Stream: "DEADLETTERS", AdvisoryStream: LegacyAdvisoryStream, Watch: both}, b.js, b.store,
		NewMetrics(prometheus.NewRegistry()), quiet)
	require.NoError(t, old.Setup(ctx))
	old.retireWatch()

	// The upgrade, same list: adopted.
	up := NewIngester(IngestConfig{Stream: "DEADLETTERS", Watch: both}, b.js, b.store, NewMetrics(prometheus.NewRegistry()), quiet)
	require.NoError(t, up.Setup(ctx))
	require.Equal(t, LegacyAdvisoryStream, up.Config().AdvisoryStream)
	up.retireWatch() // every replica of the old list gone

	// The later deploy of its own, taking EMAILS off.
	ordersOnly, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	shrunk := NewIngester(IngestConfig{Stream: "DEADLETTERS", Watch: ordersOnly}, b.js, b.store, NewMetrics(prometheus.NewRegistry()), quiet)
	err = shrunk.Setup(ctx)
	assert.NoError(t, err, "a console of this deployment with one stream fewer on its list must start (README: change DLQ_WATCH_STREAMS in a deploy of its own after the upgrade)")
}
