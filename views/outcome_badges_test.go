package views_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/views"
)

// TestOnlyWhatHappenedIsGreen: the badges of item outcomes and dead-letter
// statuses are green only for what happened (replayed, resolved by hand);
// whatever did not happen as asked is amber.
func TestOnlyWhatHappenedIsGreen(t *testing.T) {
	t.Parallel()
	for outcome, want := range map[string]string{
		"replayed": views.BadgeOK, "deferred": views.BadgeInfo, "pending": views.BadgeInfo, "claimed": views.BadgeInfo,
		"unknown": views.BadgeWarn, "suppressed_duplicate": views.BadgeWarn, "blocked": views.BadgeWarn, "needs_reconciliation": views.BadgeWarn,
		"skipped": views.BadgeNeutral, "cancelled": views.BadgeNeutral,
	} {
		assert.Equal(t, want, views.ItemOutcomeKind(outcome), outcome)
	}
	for status, want := range map[string]string{
		"replayed": views.BadgeOK, "resolved": views.BadgeOK, "quarantined": views.BadgeWarn, "replay_failed": views.BadgeWarn,
		"needs_reconciliation": views.BadgeWarn, "replay_requested": views.BadgeInfo, "discarded": views.BadgeNeutral,
	} {
		assert.Equal(t, want, views.StatusKind(status), status)
	}
	assert.Equal(t, "suppressed as a duplicate", views.OutcomeText("suppressed_duplicate"))
	assert.Equal(t, "needs reconciliation", views.OutcomeText("needs_reconciliation"))
}
