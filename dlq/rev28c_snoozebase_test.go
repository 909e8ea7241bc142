package dlq

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// TestRevLeft28SnoozeBaseCountsOnlyItsTenantsPendingArrivals: an error
// group lives in acme and in globex (one fingerprint). globex's new dead
// letters are stored but not folded yet (their counter deltas pending)
// when acme's group is snoozed "until 2 more arrive": the snooze counts
// from acme's arrivals only (its folded ones and its own pending deltas),
// so acme's 2 next arrivals wake it, and globex's arrivals, before or
// after, neither put its end off nor bring it closer.
func TestRevLeft28SnoozeBaseCountsOnlyItsTenantsPendingArrivals(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com", EmailVerified: true}
	boom := letter{err: "boom 28", stack: "main.boom()"}
	globexBoom := letter{tenant: "globex", err: "boom 28", stack: "main.boom()"}
	fp := Fingerprint(ClassPermanent, "boom 28", "main.boom()")
	l.insert(t, boom, boom, globexBoom) // folded: acme 2, globex 1
	// Stored, not folded: one of acme's and three of globex's, pending.
	pending := []Record{l.record(boom), l.record(globexBoom), l.record(globexBoom), l.record(globexBoom)}
	_, err := l.store.Insert(ctx, pending)
	require.NoError(t, err)

	acme := GroupRef{Tenant: "acme", Fingerprint: fp}
	require.NoError(t, l.store.SnoozeGroup(ctx, acme, SnoozeInput{GrowBy: 2}, oncall, quarantine.RequestMeta{}))
	triage := func() GroupTriage {
		t.Helper()
		tr, err := l.store.GroupTriage(ctx, []string{"acme", "globex"}, []string{fp})
		require.NoError(t, err)
		require.Len(t, tr, 1, "only acme's group has a triage row")
		require.Equal(t, "acme", tr[0].Tenant)
		return tr[0]
	}
	assert.Equal(t, int64(3), triage().SnoozeBase, "acme's arrivals: two folded and its own pending one, none of globex's")
	_, err = FoldCounters(ctx, l.db.Pool)
	require.NoError(t, err)
	assert.True(t, triage().Snoozed, "the fold of what had arrived before the snooze does not end it")

	l.insert(t, globexBoom, globexBoom, globexBoom)
	assert.True(t, triage().Snoozed, "globex's arrivals do not count for acme")
	l.insert(t, boom)
	assert.True(t, triage().Snoozed, "one of acme's arrived")
	l.insert(t, boom)
	tr := triage()
	assert.Equal(t, int64(5), tr.Arrived)
	assert.False(t, tr.Snoozed, "two of acme's arrived since the snooze: it ended")
}
