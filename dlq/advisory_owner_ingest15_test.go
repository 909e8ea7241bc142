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
	require.ErrorIs(t, err, ErrAdvisoryStreamNotOurs, "staging's start refused: the stream is production's")
	assert.Contains(t, err.Error(), "DLQ_SUBJECT_PREFIX dlq", "names the deployment it is")
	assert.ElementsMatch(t, before.Subjects, after.Subjects, "staging added nothing to production's stream")
	assert.Equal(t, "dlq", after.Metadata[advisoryOwnerPrefixKey], "the recorded deployment kept")
}
