package replaypolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRetentionLinesAgreeWithFor: each line of the retention terms (the
// policy page, the dashboard, `console policy show`) says, status by
// status, what the keeper (For) keeps a dead letter for whose item type
// that line's rule decides: the rule's own period, else the section's,
// else the default. The terms put narrower rules first, a tenant's rule
// among them, so several rules match some item types; the last line is
// what For gives an item type no rule matches (review 23g).
func TestRetentionLinesAgreeWithFor(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, lines(
		`[retention]`, `closed = "30d"`, `replay_failed = "180d"`,
		`[[retention.rule]]`, `tenant = "acme"`, `item_type = "billing.refund.*"`, `closed = "365d"`, `unresolved = "never"`,
		`[[retention.rule]]`, `item_type = "billing.*"`, `closed = "90d"`, `discarded = "14d"`,
		`[[retention.rule]]`, `item_type = "billing.>"`, `closed = "7d"`, `discarded = "7d"`,
		`[[retention.rule]]`, `item_type = "orders.*"`, `quarantined = "14d"`,
	))
	ret := tbl.Retention()
	ls := ret.Lines()
	require.Len(t, ls, 5)
	for _, tc := range []struct {
		line             int // the line of the rule that decides (4: the section's)
		tenant, itemType string
	}{
		{0, "acme", "billing.refund.partial"},
		{1, "acme", "billing.charge"},
		{1, "globex", "billing.refund"},
		{2, "acme", "billing.charge.card"},
		{2, "globex", "billing.refund.partial"},
		{3, "acme", "orders.created"},
		{4, "acme", "search.index_update"},
		{4, "globex", "orders.created.eu"},
	} {
		for i, st := range RetentionStatuses {
			k, ok := ret.For(tc.tenant, tc.itemType, st)
			require.True(t, ok)
			assert.Equalf(t, k.String(), ls[tc.line].Keep[i].String(), "%s %s %s: the keeper keeps it %s; line %d (%s %s) says %s",
				tc.tenant, tc.itemType, st, k, tc.line+1, ls[tc.line].Tenant, ls[tc.line].ItemType, ls[tc.line].Keep[i])
		}
	}
	// Spelled out for one line: billing.> keeps its closed ones 7d, its
	// unresolved ones as the section (quarantined: the default's 90d).
	want := map[string]string{"quarantined": "90d", "replay_failed": "180d", "replayed": "7d", "discarded": "7d", "resolved": "7d"}
	for i, st := range RetentionStatuses {
		assert.Equal(t, want[st], ls[2].Keep[i].String(), st)
	}
}
