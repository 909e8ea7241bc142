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
// console of another prefix neither writes to it nor consumes it (a
// prefix change is recorded by hand: a database restored from another
// deployment's dump cannot tell it). A stream made before (no prefix
// recorded) is stamped by the console whose subjects it holds; one a
// console of another prefix made is refused; one an operator made, with
// an unrelated subject, is this deployment's as before.
func TestRev40SecondDeploymentOnTheDefaultDLQStreamIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.idle(t, IngestConfig{}) // production: dlq, DLQ
	assert.Equal(t, DefaultSubjectPrefix, b.advisoryConfig(t, "DLQ").Metadata[advisoryOwnerPrefixKey], "the stream records its prefix")

	staging := b.newIdle(IngestConfig{Prefix: "stg"}, NewStore(testdb.New(t).Pool))
	err := staging.Setup(ctx)
	require.ErrorIs(t, err, ErrDLQStreamNotOurs)
	assert.Contains(t, err.Error(), `records DLQ_SUBJECT_PREFIX "dlq"`)
	assert.Contains(t, err.Error(), "DLQ_STREAM of its own")
	assert.NotContains(t, b.advisoryConfig(t, "DLQ").Subjects, "stg.>", "nothing of staging's put on production's stream")
	err = b.newIdle(IngestConfig{Prefix: "stg"}, b.store).Setup(ctx)
	require.ErrorIs(t, err, ErrDLQStreamNotOurs, "production's own database, restored for staging, proves nothing")

	// Made before the prefix was recorded, by an older console.
	other := setup(t)
	other.createStream(t, jetstream.StreamConfig{Name: "DLQ", Description: dlqStreamDescription, Subjects: []string{"dlq.>"}, Duplicates: DuplicateWindow})
	err = other.newIdle(IngestConfig{Prefix: "stg"}, NewStore(testdb.New(t).Pool)).Setup(ctx)
	require.ErrorIs(t, err, ErrDLQStreamNotOurs, "a console's stream capturing another prefix's subjects and not this one's")
	assert.Contains(t, err.Error(), "records no DLQ_SUBJECT_PREFIX and captures [dlq.>]")
	other.idle(t, IngestConfig{})
	assert.Equal(t, DefaultSubjectPrefix, other.advisoryConfig(t, "DLQ").Metadata[advisoryOwnerPrefixKey], "stamped by the console whose subjects it holds")

	// Made by an operator, with a subject of their own.
	byHand := setup(t)
	byHand.createStream(t, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"audit.>"}, Duplicates: DuplicateWindow})
	byHand.idle(t, IngestConfig{})
	cfg := byHand.advisoryConfig(t, "DLQ")
	assert.ElementsMatch(t, []string{"dlq.>", "audit.>"}, cfg.Subjects, "the console's subjects added, the operator's kept")
	assert.Empty(t, cfg.Metadata[advisoryOwnerPrefixKey], "audit.> may be another deployment's: not stamped")
}

// TestRev40SharedDLQStreamIsNotTakenByWhicheverUpgradesFirst: a stream a
// second deployment already shares (staging put stg.> beside dlq.> before
// this release) records no prefix. Stamped by whichever upgraded first, it
// would lock the other out of its own stream: it is left unstamped (both
// start, as before this release, warned), until an operator untangles it
// and records the prefix by hand; from then on the other is refused.
func TestRev40SharedDLQStreamIsNotTakenByWhicheverUpgradesFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, jetstream.StreamConfig{Name: "DLQ", Description: dlqStreamDescription, Subjects: []string{"dlq.>", "stg.>"}, Duplicates: DuplicateWindow})
	require.NoError(t, b.newIdle(IngestConfig{Prefix: "stg"}, NewStore(testdb.New(t).Pool)).Setup(ctx))
	assert.Empty(t, b.advisoryConfig(t, "DLQ").Metadata[advisoryOwnerPrefixKey], "not stamped by staging")
	require.NoError(t, b.newIdle(IngestConfig{}, b.store).Setup(ctx), "production not locked out")
	assert.Empty(t, b.advisoryConfig(t, "DLQ").Metadata[advisoryOwnerPrefixKey], "nor by production")

	// Untangled by hand: the other's subject off, the prefix recorded.
	cfg := b.advisoryConfig(t, "DLQ")
	cfg.Subjects = []string{"dlq.>"}
	cfg.Metadata = map[string]string{advisoryOwnerPrefixKey: DefaultSubjectPrefix}
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, b.newIdle(IngestConfig{}, b.store).Setup(ctx))
	require.ErrorIs(t, b.newIdle(IngestConfig{Prefix: "stg"}, NewStore(testdb.New(t).Pool)).Setup(ctx), ErrDLQStreamNotOurs)
}
