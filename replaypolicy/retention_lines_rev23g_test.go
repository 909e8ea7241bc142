package replaypolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevRetention23LineShowsAnEarlierNarrowerRulesPeriods: the policy page
// and the dashboard show the retention terms as Retention.Lines: one line
// per [[retention.rule]], with the period it keeps each status for. Lines
// works a rule's periods out by asking For about an example item type of
// the rule (ruleExample: "*" and a trailing ">" filled with "x"). When an
// earlier, narrower rule also matches that example ("narrower first", which
// Parse accepts), the line of the broader rule shows the earlier rule's
// periods, not its own. Here rule 2 (billing.>, closed 7d) is what decides
// billing.a.b; its line reads 365d (rule 1's, for billing.*), so the page
// promises a year for dead letters the keeper removes after a week.
func TestRevRetention23LineShowsAnEarlierNarrowerRulesPeriods(t *testing.T) {
	t.Parallel()
	table, err := Parse("retention.toml", []byte(`
[[rule]]
item_type = "billing.>"
class = "manual"

[retention]
closed = "30d"
unresolved = "90d"

[[retention.rule]]
item_type = "billing.*"
closed = "365d"

[[retention.rule]]
item_type = "billing.>"
closed = "7d"
`))
	require.NoError(t, err, "narrower first is the order docs/replay.md asks for")
	ret := table.Retention()

	// What the keeper does (mayGo asks For): billing.a.b is rule 2's.
	k, ok := ret.For("acme", "billing.refund.partial", "discarded")
	require.True(t, ok)
	require.Equal(t, "7d", k.String(), "rule 2 decides a three-token billing item type")

	lines := ret.Lines()
	require.Len(t, lines, 3)
	require.Equal(t, "billing.>", lines[1].ItemType)
	shown := map[string]string{}
	for i, st := range RetentionStatuses {
		shown[st] = lines[1].Keep[i].String()
	}
	for _, st := range []string{"replayed", "discarded", "resolved"} {
		assert.Equalf(t, "7d", shown[st], "the line of retention.rule 2 (billing.>, closed = \"7d\") shows %s dead letters kept %s", st, shown[st])
	}
}
