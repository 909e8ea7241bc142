package dlq

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRev40SecondDeploymentOnTheDefaultDLQStreamIsRefused: a staging
// console on production's NATS account given DLQ_SUBJECT_PREFIX stg but
// left on the default DLQ_STREAM put stg.> on production's DLQ stream and
// pulled from its durable (one name, no filter): it stored production's
// dead letters in its own database, and production got them only through
// its sweep. The DLQ stream now records its deployment's prefix, and a
// console of a prefix its database never used neither writes to it nor
// consumes it (a DLQ_SUBJECT_PREFIX change of one deployment is its own:
// TestFixIngest15PrefixChangeOfTheSameDeploymentIsItsOwn). A stream made
// before (no prefix recorded) is stamped by the console whose subjects it
// holds, and refused to one whose it does not.
func TestRev40SecondDeploymentOnTheDefaultDLQStreamIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.idle(t, IngestConfig{}) // production: dlq, DLQ
	assert.Equal(t, DefaultSubjectPrefix, b.advisoryConfig(t, "DLQ").Metadata[advisoryOwnerPrefixKey], "the stream records its prefix")

	staging := b.newIdle(IngestConfig{Prefix: "stg"}, NewStore(testdb.New(t).Pool)) // its own database
	err := staging.Setup(ctx)
	require.ErrorIs(t, err, ErrDLQStreamNotOurs)
	assert.Contains(t, err.Error(), `records DLQ_SUBJECT_PREFIX "dlq"`)
	assert.Contains(t, err.Error(), "DLQ_STREAM of its own")
	assert.NotContains(t, b.advisoryConfig(t, "DLQ").Subjects, "stg.>", "nothing of staging's put on production's stream")
	_, err = b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)

	// A stream made before the prefix was recorded, by hand or an older
	// console.
	other := setup(t)
	other.createStream(t, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}, Duplicates: DuplicateWindow})
	err = other.newIdle(IngestConfig{Prefix: "stg"}, NewStore(testdb.New(t).Pool)).Setup(ctx)
	require.ErrorIs(t, err, ErrDLQStreamNotOurs, "a stream capturing another prefix's subjects and not this one's")
	assert.Contains(t, err.Error(), "records no DLQ_SUBJECT_PREFIX and captures [dlq.>]")
	other.idle(t, IngestConfig{})
	assert.Equal(t, DefaultSubjectPrefix, other.advisoryConfig(t, "DLQ").Metadata[advisoryOwnerPrefixKey], "stamped by the console whose subjects it holds")
}

// TestRev40SharedDLQStreamIsNotTakenByWhicheverUpgradesFirst: a stream a
// second deployment already shares (staging put stg.> beside dlq.> before
// this release) records no prefix. Staging upgrading first found its own
// subject on it, took it for its own and stamped it "stg": production was
// then refused on its own stream. A stream capturing another prefix its
// database never used is refused to both until an operator untangles it.
func TestRev40SharedDLQStreamIsNotTakenByWhicheverUpgradesFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>", "stg.>"}, Duplicates: DuplicateWindow})
	err := b.newIdle(IngestConfig{Prefix: "stg"}, NewStore(testdb.New(t).Pool)).Setup(ctx)
	require.ErrorIs(t, err, ErrDLQStreamNotOurs)
	assert.Contains(t, err.Error(), "besides this deployment's stg.>")
	assert.Empty(t, b.advisoryConfig(t, "DLQ").Metadata[advisoryOwnerPrefixKey], "not stamped")
	err = b.newIdle(IngestConfig{}, b.store).Setup(ctx)
	require.ErrorIs(t, err, ErrDLQStreamNotOurs, "production's database never used stg either")

	// Untangled by hand: the other's subject off, the prefix recorded.
	cfg := b.advisoryConfig(t, "DLQ")
	cfg.Subjects = []string{"dlq.>"}
	cfg.Metadata = map[string]string{advisoryOwnerPrefixKey: DefaultSubjectPrefix}
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, b.newIdle(IngestConfig{}, b.store).Setup(ctx))
}
