package dlq

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev40ReplicaGoneWithoutAWordKeepsItsStreamsGiveUps: a rolling
// deploy adds EMAILS to DLQ_WATCH_STREAMS; the new replica announces its
// list (EMAILS' advisory subjects go on the advisory stream) and then dies
// without a word, crash-looping for longer than its lease. A replica still
// on the old list acked every EMAILS give-up without a row once that lease
// ran out, its sweep passed them over for good, and its check took EMAILS'
// subjects off the advisory stream: when the new replica came back, none
// was ever stored. A lapsed list now counts for watcherRemembered: the
// give-up is stored as it came (at once: handed back with no live replica
// to take it, a busy stream's would fill the advisory consumer's
// MaxAckPending), and its subjects stay; only a day later is the stream
// taken as off the configuration.
func TestRev40ReplicaGoneWithoutAWordKeepsItsStreamsGiveUps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	old, _ := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	ws, err := ParseWatchStreams("ORDERS,EMAILS")
	require.NoError(t, err)
	newer, _ := b.idle(t, IngestConfig{Watch: ws})
	lapsed := func(ago string) {
		t.Helper()
		_, err := b.db.Pool.Exec(ctx, `UPDATE ingest_watchers SET expires_at = now() - $2::interval WHERE replica = $1`, newer.replica, ago)
		require.NoError(t, err)
	}
	subjects := func() []string {
		t.Helper()
		s, err := b.js.Stream(ctx, "DLQ_ADVISORIES")
		require.NoError(t, err)
		return s.CachedInfo().Config.Subjects
	}
	emails := []string{AdvisoryMaxDeliveries + ".EMAILS.*", AdvisoryTerminated + ".EMAILS.*"}
	adv := terminatedAdvisory("EMAILS", 1)

	verdict, _ := old.whoseAdvisory(ctx, adv.Subject, adv.Data)
	assert.Equal(t, watchedElsewhere, verdict, "handed back while the replica that lists EMAILS runs")
	lapsed("10 minutes") // crash-looping: its lease (two minutes) ran out
	verdict, _ = old.whoseAdvisory(ctx, adv.Subject, adv.Data)
	assert.Equal(t, ours, verdict, "stored here as it came, not acked without a row (nor handed back with nobody to take it)")
	old.keepWatchers(ctx)
	assert.Subset(t, subjects(), emails, "EMAILS' give-ups are still captured")
	publish(t, b.js, adv)
	b.peek(t, "DLQ_ADVISORIES", 1)
	res, err := old.sweep(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	assert.Zero(t, res.NotWatched, "not passed over")
	assert.Equal(t, uint64(1), res.Stored, "stored as it came")

	lapsed("25 hours") // gone for good: as if EMAILS were off the configuration
	verdict, _ = old.whoseAdvisory(ctx, adv.Subject, adv.Data)
	assert.Equal(t, watchedByNone, verdict)
	old.keepWatchers(ctx)
	have := subjects()
	assert.NotContains(t, have, emails[0])
	assert.NotContains(t, have, emails[1])
	var listed int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ingest_watchers WHERE replica = $1`, newer.replica).Scan(&listed))
	assert.Zero(t, listed, "a list a day past its lease is removed")
}
