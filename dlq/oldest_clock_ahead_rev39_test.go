package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev39ServerClockAheadDoesNotHideTheOldestUnresolved: a NATS server
// whose clock runs hours ahead (by less than a year, so its stored times
// are taken as they are) dated every dead letter hours younger: one the
// console stored five hours ago and nobody triaged read as an hour in the
// future, quarantine_oldest_unresolved_age_seconds was negative,
// DeadLetterOldestUnresolved (4 h) stayed silent and the dashboard did not
// call it stale. Such a dead letter is dated by when the console stored
// it; one whose stored time is earlier keeps that.
func TestRev39ServerClockAheadDoesNotHideTheOldestUnresolved(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	now := time.Now().UTC()
	ahead := l.insert(t, letter{tenant: "acme", at: now.Add(time.Hour), err: "boom"})
	stored := now.Add(-5 * time.Hour).Truncate(time.Microsecond)
	_, err := l.db.Pool.Exec(ctx, `UPDATE dead_letters SET received_at = $2 WHERE id = $1`, ahead[0], stored)
	require.NoError(t, err)
	behind := l.insert(t, letter{tenant: "globex", at: now.Add(-2 * time.Hour), err: "boom"})
	require.NotEmpty(t, behind)

	oldest, err := l.store.OldestUnresolved(ctx)
	require.NoError(t, err)
	assert.WithinDuration(t, stored, oldest["acme"], time.Millisecond, "dated by when the console stored it")
	assert.WithinDuration(t, now.Add(-2*time.Hour), oldest["globex"], time.Millisecond, "dated by when JetStream stored it")

	d, err := l.store.Dashboard(ctx, DashboardQuery{Tenants: []string{"acme", "globex"}, Now: now})
	require.NoError(t, err)
	for _, ts := range d.Tenants {
		if ts.Tenant == "acme" {
			assert.WithinDuration(t, stored, ts.OldestUnresolved, time.Millisecond)
			assert.Equal(t, ahead[0], ts.OldestUnresolvedID)
		}
	}
}
