package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRev35RetentionHoldsWhileTheDatabaseClockIsAhead: retention judges
// ages by the database's clock (received_at and now() are both its), so a
// database whose clock jumped ahead (a failover to a host days fast) made
// every dead letter that much older, and the keeper removed for good
// what its period still kept, only warning of the skew. A pass whose
// database clock is ahead of the console's by more than a minute now
// removes nothing by age; the same dead letters go once the clocks agree.
func TestRev35RetentionHoldsWhileTheDatabaseClockIsAhead(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	closed40 := r.letters(t, 2, "acme", "orders.refund", r.daysAgo(40), dlq.StatusDiscarded) // past the 30 days of closed ones
	table, err := replaypolicy.Parse("retention.toml", []byte(retentionPolicy))
	require.NoError(t, err)
	behind := r.keeperWith(app.RetentionOf(table.Retention()), dlq.KeeperConfig{Now: func() time.Time { return time.Now().Add(-48 * time.Hour) }})
	pass, err := behind.Pass(context.Background())
	require.NoError(t, err)
	require.False(t, pass.Skipped)
	assert.Greater(t, pass.ClockAhead, 47*time.Hour, "the pass says how far the database's clock is ahead")
	assert.Empty(t, pass.Runs, "a retention run under a database clock ahead of the console's")
	assert.Equal(t, closed40, r.remaining(t, closed40), "removed by a clock the console does not agree with")

	pass = r.pass(t)
	assert.Zero(t, pass.ClockAhead)
	assert.Empty(t, r.remaining(t, closed40), "once the clocks agree, retention removes them")
}
