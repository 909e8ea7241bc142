package dlq

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRevIngest15SameDLQStreamOtherPrefixSharesTheAdvisoryStream: staging
// beside production on one NATS account, each with its own PostgreSQL,
// staging given its own DLQ_SUBJECT_PREFIX (stg) but the default
// DLQ_STREAM left as it was (the mistake the runbook's "advisory stream of
// another deployment" says is refused: "or when two deployments have one
// DLQ_STREAM"). Production's DLQ_ADVISORIES records DLQ_STREAM DLQ, prefix
// dlq. The owner recorded is only the DLQ_STREAM, so staging takes the
// stream for its own: it adds EMAILS' subjects, rewrites the recorded
// prefix to its own, and pulls from the one durable; production then
// judges staging's give-ups of EMAILS (no replica in ITS database watches
// EMAILS, the stream records "its" owner) nobody's and acks them without
// a row. Staging's start must be refused, and the stream left as it was.
func TestRevIngest15SameDLQStreamOtherPrefixSharesTheAdvisoryStream(t *testing.T) {
	t.Parallel()
	b := setup(t) // production's database and the shared NATS account
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.*.send.>"}})
	orders, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	emails, err := ParseWatchStreams("EMAILS")
	require.NoError(t, err)

	prod := b.newIdle(IngestConfig{Watch: orders}, b.store)
	require.NoError(t, prod.Setup(ctx))
	before := b.advisoryConfig(t, LegacyAdvisoryStream)
	require.Equal(t, "DLQ", before.Metadata[advisoryOwnerKey])
	require.Equal(t, "dlq", before.Metadata[advisoryOwnerPrefixKey])

	stagingDB := testdb.New(t)
	staging := b.newIdle(IngestConfig{Prefix: "stg", Watch: emails}, NewStore(stagingDB.Pool))
	err = staging.Setup(ctx)

	after := b.advisoryConfig(t, LegacyAdvisoryStream)
	adv := terminatedAdvisory("EMAILS", 1)
	verdict, _ := prod.whoseAdvisory(ctx, adv.Subject, adv.Data)
	t.Logf("staging's Setup: %v; the advisory stream's subjects %v, metadata %v; production's verdict on staging's give-up of EMAILS: %v (2: acked without a row)",
		err, after.Subjects, after.Metadata, verdict)
	// Refused at the DLQ stream already, which records production's prefix
	// since review round 40 (TestRev40SecondDeploymentOnTheDefaultDLQStreamIsRefused).
	require.ErrorIs(t, err, ErrDLQStreamNotOurs, "staging's start refused: the stream is production's")
	assert.Contains(t, err.Error(), `DLQ_SUBJECT_PREFIX "dlq"`, "names the deployment it is")
	assert.ElementsMatch(t, before.Subjects, after.Subjects, "staging added nothing to production's stream")
	assert.Equal(t, "dlq", after.Metadata[advisoryOwnerPrefixKey], "the recorded deployment kept")
}

// TestFixIngest15PrefixChangeOfTheSameDeploymentIsItsOwn: the same
// deployment (its database announcing the same streams) started with
// another DLQ_SUBJECT_PREFIX finds every subject its own: it starts and
// records its new prefix. An owner recorded by hand with the DLQ_STREAM
// alone (as the runbook says) is this deployment's.
func TestFixIngest15PrefixChangeOfTheSameDeploymentIsItsOwn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	orders := b.watchOrders(t)
	first := b.newIdle(IngestConfig{Watch: orders}, b.store)
	require.NoError(t, first.Setup(ctx))

	// The DLQ stream's prefix is recorded by hand for a prefix change
	// (docs/runbook.md, "DLQ stream of another deployment"; review round 40):
	// nothing a console holds tells it from a second deployment's start.
	moved := b.newIdle(IngestConfig{Prefix: "dlq2", Watch: orders}, b.store)
	require.ErrorIs(t, moved.Setup(ctx), ErrDLQStreamNotOurs)
	dlqCfg := b.advisoryConfig(t, "DLQ")
	dlqCfg.Metadata[advisoryOwnerPrefixKey] = "dlq2"
	_, err := b.js.UpdateStream(ctx, dlqCfg)
	require.NoError(t, err)
	require.NoError(t, moved.Setup(ctx))
	cfg := b.advisoryConfig(t, LegacyAdvisoryStream)
	assert.Equal(t, "dlq2", cfg.Metadata[advisoryOwnerPrefixKey])
	ours, err := moved.advisoryStreamOurs(ctx)
	require.NoError(t, err)
	assert.True(t, ours)

	cfg.Metadata = map[string]string{advisoryOwnerKey: "DLQ"} // recorded by hand
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	alone := b.newIdle(IngestConfig{Prefix: "dlq3", Watch: orders}, NewStore(testdb.New(t).Pool))
	ours, err = alone.advisoryStreamOurs(ctx)
	require.NoError(t, err)
	assert.True(t, ours, "an owner recorded without a prefix is taken as recorded")
}

// TestFixIngest15RunningReplicaHandsBackOnAStreamRecordingAnotherPrefix:
// a running replica whose advisory stream records its DLQ_STREAM with
// another prefix (a second deployment with the same DLQ_STREAM, or an
// edit) may share it: an advisory of a stream none of its replicas
// watches is handed back, not acked without a row, and no subject is
// taken off; its check does not put its own prefix over the other's.
func TestFixIngest15RunningReplicaHandsBackOnAStreamRecordingAnotherPrefix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.*.send.>"}})
	in, _ := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	adv := terminatedAdvisory("EMAILS", 1)

	cfg := b.advisoryConfig(t, LegacyAdvisoryStream)
	cfg.Metadata = map[string]string{advisoryOwnerKey: "DLQ", advisoryOwnerPrefixKey: "stg"}
	cfg.Subjects = append(cfg.Subjects, advisorySubjects("EMAILS")...)
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	verdict, _ := in.whoseAdvisory(ctx, adv.Subject, adv.Data)
	assert.Equal(t, watchedElsewhere, verdict, "handed back")
	require.NoError(t, in.dropUnwatched(ctx, nil))
	assert.Subset(t, b.advisoryConfig(t, LegacyAdvisoryStream).Subjects, advisorySubjects("EMAILS"), "not taken off")

	s := in.metrics.health.get(LegacyAdvisoryStream)
	in.keepStream(ctx, LegacyAdvisoryStream, b.advisoryConfig(t, LegacyAdvisoryStream), &s)
	assert.Contains(t, s.StreamDrift, "DLQ_SUBJECT_PREFIX stg")
	assert.Equal(t, "stg", b.advisoryConfig(t, LegacyAdvisoryStream).Metadata[advisoryOwnerPrefixKey], "not taken over")
}

// TestFixIngest15AdoptionRefusesAStreamRecordingItsDLQStreamWithAnotherPrefix:
// DLQ_ADVISORIES adopted and recorded by staging (DLQ_STREAM DEADLETTERS,
// prefix stg, watching ORDERS and EMAILS); a second deployment with
// DLQ_STREAM DEADLETTERS but prefix qa (its own database) watching ORDERS
// does not adopt it (it would have taken EMAILS' subjects off as no
// replica of its own watches EMAILS): refused, the stream left as it was.
func TestFixIngest15AdoptionRefusesAStreamRecordingItsDLQStreamWithAnotherPrefix(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.*.send.>"}})
	b.createStream(t, jetstream.StreamConfig{Name: LegacyAdvisoryStream, Subjects: append(advisorySubjects("ORDERS"), advisorySubjects("EMAILS")...)})
	orders, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	both, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	staging := b.newIdle(IngestConfig{Prefix: "stg", Stream: "DEADLETTERS", Watch: both}, b.store)
	require.NoError(t, staging.Setup(ctx))
	require.Equal(t, LegacyAdvisoryStream, staging.Config().AdvisoryStream)
	before := b.advisoryConfig(t, LegacyAdvisoryStream)

	qa := b.newIdle(IngestConfig{Prefix: "qa", Stream: "DEADLETTERS", Watch: orders}, NewStore(testdb.New(t).Pool))
	err = qa.Setup(ctx)
	require.ErrorIs(t, err, ErrAdvisoryStreamNotOurs)
	assert.Contains(t, err.Error(), "DLQ_SUBJECT_PREFIX stg")
	after := b.advisoryConfig(t, LegacyAdvisoryStream)
	assert.ElementsMatch(t, before.Subjects, after.Subjects)
	assert.Equal(t, "stg", after.Metadata[advisoryOwnerPrefixKey])
}

// TestRevIngest15CreateRaceLeavesTheAddedStreamUncaptured: a rolling
// deploy that adds EMAILS to DLQ_WATCH_STREAMS, with the advisory stream
// gone (deleted to move it, or never made): a replica still on the old
// list (ORDERS) makes it first, between the new replica finding it
// missing and making it. The new replica's create is answered "already in
// use" and it went on without putting its settings back: EMAILS' subjects
// are not on the stream when its Setup returns (only the next check adds
// them), so a give-up of EMAILS raised meanwhile is captured by no stream
// and lost. Setup must leave the stream capturing every watched stream.
func TestRevIngest15CreateRaceLeavesTheAddedStreamUncaptured(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, ordersStream)
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.*.send.>"}})
	orders, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	both, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	old := b.newIdle(IngestConfig{Watch: orders}, b.store)
	require.NoError(t, old.announceWatch(ctx))

	next := b.newIdle(IngestConfig{Watch: both}, b.store)
	next.beforeStreamCreate = func(name string) {
		if name == LegacyAdvisoryStream {
			_, err := b.js.CreateStream(ctx, old.advisoryStreamConfig()) // the old replica's
			require.NoError(t, err)
		}
	}
	require.NoError(t, next.Setup(ctx))
	assert.Subset(t, b.advisoryConfig(t, LegacyAdvisoryStream).Subjects, advisorySubjects("EMAILS"),
		"EMAILS' give-ups captured once the replica watching it has set up")
}

// TestFixIngest15CreateRaceLostToAnotherDeploymentIsRefused: the create
// lost to another deployment's console (staging, its own DLQ_STREAM
// recorded) is judged as a stream found: refused, nothing added to it.
func TestFixIngest15CreateRaceLostToAnotherDeploymentIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	orders := b.watchOrders(t)
	b.createStream(t, jetstream.StreamConfig{Name: "EMAILS", Subjects: []string{"mail.*.send.>"}})
	emails, err := ParseWatchStreams("EMAILS")
	require.NoError(t, err)
	other := b.newIdle(IngestConfig{Prefix: "stg", Stream: "DEADLETTERS", Watch: emails, AdvisoryStream: LegacyAdvisoryStream}, NewStore(testdb.New(t).Pool))

	prod := b.newIdle(IngestConfig{Watch: orders}, b.store)
	prod.beforeStreamCreate = func(name string) {
		if name == LegacyAdvisoryStream {
			_, err := b.js.CreateStream(ctx, other.advisoryStreamConfig())
			require.NoError(t, err)
		}
	}
	require.ErrorIs(t, prod.Setup(ctx), ErrAdvisoryStreamNotOurs)
	cfg := b.advisoryConfig(t, LegacyAdvisoryStream)
	assert.ElementsMatch(t, advisorySubjects("EMAILS"), cfg.Subjects)
	assert.Equal(t, "DEADLETTERS", cfg.Metadata[advisoryOwnerKey])
}
