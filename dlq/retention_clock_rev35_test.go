package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRev35RetentionHoldsWhileTheDatabaseClockIsAhead: retention judges
// ages by the database's clock (received_at and now() are both its), so a
// database whose clock jumped ahead (a failover to a host days fast) made
// every dead letter that much older, and the keeper removed for good
// what its period still kept, only warning of the skew. A pass whose
// database clock is ahead of the console's by more than a minute now
// removes nothing by age, and says so in
// quarantine_partition_keeper_db_clock_ahead_seconds (an alert); the same
// dead letters go once the clocks agree.
func TestRev35RetentionHoldsWhileTheDatabaseClockIsAhead(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	closed40 := r.letters(t, 2, "acme", "orders.refund", r.daysAgo(40), dlq.StatusDiscarded) // past the 30 days of closed ones
	table, err := replaypolicy.Parse("retention.toml", []byte(retentionPolicy))
	require.NoError(t, err)
	behind := -48 * time.Hour // this console's clock, against the database's
	reg := prometheus.NewRegistry()
	k := dlq.NewKeeper(dlq.NewStore(r.db.Pool), dlq.KeeperConfig{
		Policy: func() dlq.RetentionPolicy { return app.RetentionOf(table.Retention()) },
		Now:    func() time.Time { return time.Now().Add(behind) },
		Checkpoint: func(ctx context.Context, tx pgx.Tx, reason string) error {
			_, err := audit.Record(ctx, tx, r.signer, reason)
			return err
		},
	}, reg, quiet)
	ahead := func() float64 {
		t.Helper()
		return gaugeOf(t, reg, "quarantine_partition_keeper_db_clock_ahead_seconds")
	}

	pass, err := k.Pass(context.Background())
	require.NoError(t, err)
	require.False(t, pass.Skipped)
	assert.Greater(t, pass.ClockAhead, 47*time.Hour, "the pass says how far the database's clock is ahead")
	assert.Greater(t, ahead(), 47*3600.0, "and so does its gauge")
	assert.Empty(t, pass.Runs, "a retention run under a database clock ahead of the console's")
	assert.Equal(t, closed40, r.remaining(t, closed40), "removed by a clock the console does not agree with")

	behind = 0
	pass, err = k.Pass(context.Background())
	require.NoError(t, err)
	assert.Zero(t, pass.ClockAhead)
	assert.Zero(t, ahead())
	assert.Empty(t, r.remaining(t, closed40), "once the clocks agree, retention removes them")
}
