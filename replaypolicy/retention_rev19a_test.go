package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevRetention19HugeDayCountWrapsIntoAShortPeriod: a period in days
// past the 36500d bound must be refused ("must be between 1h and
// 36500d"). parseRetention clamps the day count at 1<<20 and multiplies
// it into a time.Duration, which overflows int64 for any count past
// 106,751 days: "213505d" wraps to 24h25m and passes the bounds check, so
// an operator who wrote "keep these 585 years" has them removed after a
// day.
func TestRevRetention19HugeDayCountWrapsIntoAShortPeriod(t *testing.T) {
	t.Parallel()
	table, err := Parse("retention.toml", []byte(`
[[rule]]
item_type = "search.*"
class = "rebuildable"

[retention]
closed = "213505d"
`))
	if err == nil {
		k, ok := table.Retention().For("acme", "orders.refund", "discarded")
		require.True(t, ok)
		assert.Failf(t, "a period past 36500d is accepted", "closed = \"213505d\" is kept as %s (%v)", k, k.For)
		assert.GreaterOrEqual(t, k.For, 36500*24*time.Hour, "never shorter than what was written")
		return
	}
	assert.ErrorIs(t, err, ErrInvalidPolicy)
	assert.Contains(t, err.Error(), "must be between")
}

// TestRevRetention19WiderTenantRuleLosesToEarlierItemTypeRule: docs/replay.md
// says the file is refused "wherever the order would keep dead letters
// other than a rule says, sooner or later". Rule 1 keeps every tenant's
// billing dead letters a week; rule 2, after it, keeps everything of tenant
// acme for good (a legal hold). Neither covers the other, and rule 1 sets
// every status rule 2 does, so retentionRuleReached finds nothing to say:
// the file is accepted, and acme's billing dead letters, which acme's rule
// keeps for good, go after 7 days. The tenant's hold is loosened by a rule
// more specific in item type, silently.
func TestRevRetention19WiderTenantRuleLosesToEarlierItemTypeRule(t *testing.T) {
	t.Parallel()
	table, err := Parse("retention.toml", []byte(`
[[rule]]
item_type = "search.*"
class = "rebuildable"

[retention]
closed = "30d"
unresolved = "90d"

[[retention.rule]]
item_type = "billing.>"
closed = "7d"
unresolved = "7d"

[[retention.rule]]
tenant = "acme"
closed = "never"
unresolved = "never"
`))
	if err != nil {
		assert.ErrorIs(t, err, ErrInvalidPolicy, "refused, on rule 2's line")
		return
	}
	k, ok := table.Retention().For("acme", "billing.invoice", "quarantined")
	require.True(t, ok)
	assert.True(t, k.Forever, "acme's billing dead letters are acme's: rule 2 keeps them for good; the file was accepted and they are kept %s", k)
}
