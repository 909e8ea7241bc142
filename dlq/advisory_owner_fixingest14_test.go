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

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// newIdle is an ingester on store, not set up.
func (b *bundle) newIdle(cfg IngestConfig, store *Store) *Ingester {
	return NewIngester(cfg, b.js, store, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// advisoryConfig reads stream name's configuration.
func (b *bundle) advisoryConfig(t *testing.T, name string) jetstream.StreamConfig {
	t.Helper()
	s, err := b.js.Stream(context.Background(), name)
	require.NoError(t, err)
	return s.CachedInfo().Config
}

// TestFixIngest14UnrecordedStreamWithAnotherDeploymentsSubjectsIsRefusedByTheDefaultDeployment:
// DLQ_ADVISORIES made before the owner was recorded, adopted by staging
// (its own DLQ_STREAM) on a release that recorded nothing: it holds only
// staging's ORDERS subjects. Production (default DLQ_STREAM) upgraded first
// and watching EMAILS does not take it (nor add EMAILS' subjects to it):
// Setup refuses, naming the subjects. Staging, upgraded, adopts it and
// records itself; production then names staging's deployment.
func TestFixIngest14UnrecordedStreamWithAnotherDeploymentsSubjectsIsRefusedByTheDefaultDeployment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.*.send.>"}})
	b.createStream(t, jetstream.StreamConfig{Name: LegacyAdvisoryStream, Subjects: advisorySubjects("ORDERS")})
	emails, err := ParseWatchStreams("EMAILS")
	require.NoError(t, err)
	orders, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)

	prodDB := testdb.New(t)
	prod := b.newIdle(IngestConfig{Watch: emails}, NewStore(prodDB.Pool))
	err = prod.Setup(ctx)
	require.ErrorIs(t, err, ErrAdvisoryStreamNotOurs)
	assert.Contains(t, err.Error(), AdvisoryTerminated+".ORDERS.*")
	assert.ElementsMatch(t, advisorySubjects("ORDERS"), b.advisoryConfig(t, LegacyAdvisoryStream).Subjects, "production added nothing to it")

	staging := b.newIdle(IngestConfig{Prefix: "stg", Stream: "DEADLETTERS", Watch: orders}, b.store)
	require.NoError(t, staging.Setup(ctx))
	assert.Equal(t, LegacyAdvisoryStream, staging.Config().AdvisoryStream)
	cfg := b.advisoryConfig(t, LegacyAdvisoryStream)
	assert.Equal(t, "DEADLETTERS", cfg.Metadata[advisoryOwnerKey], "staging recorded itself as the owner")
	assert.Equal(t, "stg", cfg.Metadata[advisoryOwnerPrefixKey])

	err = prod.Setup(ctx)
	require.ErrorIs(t, err, ErrAdvisoryStreamNotOurs)
	assert.Contains(t, err.Error(), "DLQ_STREAM DEADLETTERS (DLQ_SUBJECT_PREFIX stg)")
}

// TestFixIngest14UnrecordedAdoptedStreamRecordsItsOwnerAndThenShrinks: an
// adopted DLQ_ADVISORIES made before the owner was recorded (both ORDERS
// and EMAILS on it) is recorded as this deployment's by the upgrade with
// the same list; a later start with EMAILS taken off starts, and once no
// replica watches EMAILS its subjects are taken off.
func TestFixIngest14UnrecordedAdoptedStreamRecordsItsOwnerAndThenShrinks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.*.send.>"}})
	b.createStream(t, jetstream.StreamConfig{Name: LegacyAdvisoryStream, Subjects: append(advisorySubjects("ORDERS"), advisorySubjects("EMAILS")...)})
	both, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	up := b.newIdle(IngestConfig{Stream: "DEADLETTERS", Watch: both}, b.store)
	require.NoError(t, up.Setup(ctx))
	require.Equal(t, LegacyAdvisoryStream, up.Config().AdvisoryStream)
	assert.Equal(t, "DEADLETTERS", b.advisoryConfig(t, LegacyAdvisoryStream).Metadata[advisoryOwnerKey])
	up.retireWatch()

	ordersOnly, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	shrunk := b.newIdle(IngestConfig{Stream: "DEADLETTERS", Watch: ordersOnly}, b.store)
	require.NoError(t, shrunk.Setup(ctx))
	require.Equal(t, LegacyAdvisoryStream, shrunk.Config().AdvisoryStream)
	shrunk.keepWatchers(ctx)
	assert.ElementsMatch(t, advisorySubjects("ORDERS"), b.advisoryConfig(t, LegacyAdvisoryStream).Subjects, "EMAILS' subjects taken off once no replica watches it")
}

// TestFixIngest14UnrecordedStreamKnownFromARunningReplica: in a rolling
// deploy that takes EMAILS off the list, the first new replica finds the
// default deployment's DLQ_ADVISORIES made before the owner was recorded
// holding EMAILS' subjects; a running replica of its own deployment
// (announced in its database) watches EMAILS, so the stream is its own:
// it starts and records itself. Without that replica (and no owner
// recorded) it could be another deployment's: refused.
func TestFixIngest14UnrecordedStreamKnownFromARunningReplica(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.*.send.>"}})
	unrecorded := jetstream.StreamConfig{Name: LegacyAdvisoryStream, Subjects: append(advisorySubjects("ORDERS"), advisorySubjects("EMAILS")...)}
	b.createStream(t, unrecorded)
	both, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	ordersOnly, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)

	alone := b.newIdle(IngestConfig{Watch: ordersOnly}, b.store)
	require.ErrorIs(t, alone.Setup(ctx), ErrAdvisoryStreamNotOurs)
	assert.Empty(t, b.advisoryConfig(t, LegacyAdvisoryStream).Metadata[advisoryOwnerKey])

	old := b.newIdle(IngestConfig{Watch: both}, b.store)
	require.NoError(t, old.announceWatch(ctx)) // an old replica, running
	next := b.newIdle(IngestConfig{Watch: ordersOnly}, b.store)
	require.NoError(t, next.Setup(ctx))
	assert.Equal(t, "DLQ", b.advisoryConfig(t, LegacyAdvisoryStream).Metadata[advisoryOwnerKey])
}

// TestFixIngest14NoAckWithoutARowOnAStreamNotRecordedAsOurs: an advisory
// of a stream no replica of this deployment watches is acked without a
// row (and its subjects taken off) only on an advisory stream recording
// this deployment as its owner. Once it records none (metadata taken off
// by hand, or by an older console of another deployment putting its
// settings back), the advisory is handed back and the subjects stay: they
// may be another deployment's. The monitor's check puts neither subjects
// nor settings on a stream recorded as another's.
func TestFixIngest14NoAckWithoutARowOnAStreamNotRecordedAsOurs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.*.send.>"}})
	in, _ := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	adv := terminatedAdvisory("EMAILS", 1)

	cfg := b.advisoryConfig(t, "DLQ_ADVISORIES")
	require.Equal(t, "DLQ", cfg.Metadata[advisoryOwnerKey], "made with its owner recorded")
	verdict, _ := in.whoseAdvisory(ctx, adv.Subject, adv.Data)
	assert.Equal(t, watchedByNone, verdict, "on its own stream: nobody's")

	cfg.Metadata = nil
	cfg.Subjects = append(cfg.Subjects, advisorySubjects("EMAILS")...)
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	verdict, _ = in.whoseAdvisory(ctx, adv.Subject, adv.Data)
	assert.Equal(t, watchedElsewhere, verdict, "on a stream that may be shared: handed back")
	require.NoError(t, in.dropUnwatched(ctx, nil))
	assert.Subset(t, b.advisoryConfig(t, "DLQ_ADVISORIES").Subjects, advisorySubjects("EMAILS"), "not taken off")

	// Recorded as another deployment's: the check does not write it.
	cfg = b.advisoryConfig(t, "DLQ_ADVISORIES")
	cfg.Metadata = map[string]string{advisoryOwnerKey: "OTHER"}
	cfg.Subjects = advisorySubjects("EMAILS")
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	s := in.metrics.health.get("DLQ_ADVISORIES")
	in.keepStream(ctx, "DLQ_ADVISORIES", b.advisoryConfig(t, "DLQ_ADVISORIES"), &s)
	assert.Contains(t, s.StreamDrift, "DLQ_STREAM OTHER")
	assert.ElementsMatch(t, advisorySubjects("EMAILS"), b.advisoryConfig(t, "DLQ_ADVISORIES").Subjects, "ORDERS' subjects not put on another's stream")
	require.ErrorIs(t, in.Setup(ctx), ErrAdvisoryStreamNotOurs)
}
