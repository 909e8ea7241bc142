package replaypolicy

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const day = 24 * time.Hour

func TestRetention(t *testing.T) {
	t.Parallel()
	table, err := Parse("retention.toml", []byte(`
[[rule]]
item_type = "search.*"
class = "rebuildable"

[retention]
closed = "30d"
unresolved = "90d"
discarded = "7d"

[[retention.rule]]
tenant = "acme"
item_type = "billing.>"
closed = "365d"
unresolved = "never"

[[retention.rule]]
item_type = "search.*"
replayed = "36h"
`))
	require.NoError(t, err)
	plain, err := Parse("plain.toml", []byte("[[rule]]\nitem_type = \"search.*\"\nclass = \"rebuildable\"\n"))
	require.NoError(t, err)
	assert.Equal(t, plain.Version(), table.Version(), "retention is not part of the version: editing it voids no approval")

	r := table.Retention()
	for _, tc := range []struct {
		tenant, itemType, status string
		want                     Keep
		ok                       bool
	}{
		{"acme", "billing.invoice", "resolved", Keep{For: 365 * day}, true},
		{"acme", "billing.invoice.partial", "quarantined", Keep{Forever: true}, true},
		{"acme", "billing.invoice", "discarded", Keep{For: 365 * day}, true}, // the rule's group key wins over the section's status key
		{"globex", "billing.invoice", "discarded", Keep{For: 7 * day}, true},
		{"globex", "billing.invoice", "replayed", Keep{For: 30 * day}, true},
		{"globex", "search.index", "replayed", Keep{For: 36 * time.Hour}, true},
		{"globex", "search.index", "replay_failed", Keep{For: 90 * day}, true}, // the rule says nothing of it: the section
		{"globex", "orders.refund", "quarantined", Keep{For: 90 * day}, true},
		{"globex", "orders.refund", "replay_requested", Keep{}, false}, // an open replay's: never removed
		{"globex", "orders.refund", "replaying", Keep{}, false},
		{"globex", "orders.refund", "needs_reconciliation", Keep{}, false}, // a person must settle its replay first
		{"globex", "orders.refund", "purged", Keep{}, false},
	} {
		k, ok := r.For(tc.tenant, tc.itemType, tc.status)
		assert.Equal(t, tc.ok, ok, "%+v", tc)
		assert.Equal(t, tc.want, k, "%+v", tc)
	}
	assert.Equal(t, Keep{Forever: true}, r.Longest(), "acme's billing dead letters are kept for good")
	assert.Equal(t, Keep{For: 36 * time.Hour}, r.Shortest())
	lines := r.Lines()
	require.Len(t, lines, 3)
	assert.Equal(t, "*", lines[2].Tenant)
	assert.Equal(t, []string{"90d", "90d", "30d", "7d", "30d"}, keepStrings(lines[2].Keep), "the section, status by status")
	assert.Equal(t, []string{"never", "never", "365d", "365d", "365d"}, keepStrings(lines[0].Keep))

	defaults := plain.Retention()
	k, _ := defaults.For("acme", "orders.refund", "resolved")
	assert.Equal(t, 30*day, k.For, "without a section, closed dead letters are kept 30 days")
	k, _ = defaults.For("acme", "orders.refund", "quarantined")
	assert.Equal(t, 90*day, k.For, "and unresolved ones 90")
	assert.Equal(t, Keep{For: 90 * day}, defaults.Longest())
}

func keepStrings(ks []Keep) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.String()
	}
	return out
}

func TestRetentionErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ file, want string }{
		"UnknownKey":      {"[retention]\nclosed = \"30d\"\nreplaying = \"1d\"\n", `line 3: retention: unknown key "replaying"`},
		"TooShort":        {"[retention]\nclosed = \"30m\"\n", `closed = "30m": must be between 1h and 36500d`},
		"NotADuration":    {"[retention]\nunresolved = \"soon\"\n", `unresolved = "soon": not a duration`},
		"NotAString":      {"[retention]\nclosed = 30\n", `closed must be a duration string`},
		"RuleWithoutTerm": {"[[retention.rule]]\ntenant = \"acme\"\n", `retention.rule 1: the rule sets no period`},
		"RuleBadGlob":     {"[[retention.rule]]\nitem_type = \"billing*\"\nclosed = \"1d\"\n", `retention.rule 1: item_type "billing*" has token`},
		"RuleEmptyTenant": {"[[retention.rule]]\ntenant = \"\"\nclosed = \"1d\"\n", `tenant must be a non-empty string`},
		"NotATable":       {"retention = \"30d\"\n", `retention must be a table`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("bad.toml", []byte(tc.file))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidPolicy)
			assert.True(t, strings.Contains(err.Error(), tc.want), "error %q does not contain %q", err, tc.want)
		})
	}
}

// TestRetentionRuleOrder: the first matching [[retention.rule]] decides
// every period of a dead letter, so a file whose order would keep dead
// letters other than a rule says is refused on that rule's line, and an
// order that means what it says is accepted.
func TestRetentionRuleOrder(t *testing.T) {
	t.Parallel()
	rule := func(tenant, itemType, terms string) string {
		return "[[retention.rule]]\ntenant = \"" + tenant + "\"\nitem_type = \"" + itemType + "\"\n" + terms + "\n"
	}
	for name, tc := range map[string]struct {
		file string
		line int
		want string // "" for a file that is accepted
	}{
		"Repeated": {rule("acme", "billing.>", `closed = "7d"`) + rule("acme", "billing.>", `closed = "365d"`), 5,
			`retention.rule 2: tenant "acme", item_type "billing.>" can never match: retention.rule 1 (tenant "acme", item_type "billing.>")`},
		"CoveredByEveryTenant": {rule("*", "billing.*", `unresolved = "7d"`) + rule("acme", "billing.invoice", `unresolved = "never"`), 5,
			`retention.rule 2: tenant "acme", item_type "billing.invoice" can never match`},
		"OverlapLeavesAStatusToTheSection": {"[retention]\nclosed = \"30d\"\n" + rule("acme", ">", `discarded = "7d"`) + rule("*", "billing.>", `closed = "365d"`), 10,
			`retention.rule 2: retention.rule 1 (tenant "acme", item_type ">") matches some of this rule's dead letters first and sets no period for their replayed ones: those are kept 30d ([retention]'s), not this rule's closed = "365d"`},
		"OverlapLeavesAStatusToTheDefault": {rule("*", "billing.*", `closed = "365d"`) + rule("acme", ">", `quarantined = "never"`), 8,
			`sets no period for their quarantined ones: those are kept 90d (the default, as [retention] sets none), not this rule's quarantined = "never"`},
		"NarrowerFirst": {rule("acme", "billing.>", `closed = "365d"`) + rule("*", ">", `closed = "7d"`), 0, ""},
		"OverlapSettingAll": {rule("acme", ">", `closed = "7d"`+"\n"+`unresolved = "90d"`) + rule("*", "billing.>", `replayed = "365d"`), 6,
			`retention.rule 2: retention.rule 1 (tenant "acme", item_type ">") and this rule (tenant "*", item_type "billing.>") both match some dead letters, neither only the other's, and keep their replayed ones 7d and 365d`},
		"OverlapSettledFirst": {rule("acme", "billing.>", `closed = "7d"`+"\n"+`unresolved = "90d"`) + rule("acme", ">", `closed = "7d"`+"\n"+`unresolved = "90d"`) +
			rule("*", "billing.>", `replayed = "365d"`), 0, ""},
		"OverlapSameTerms":     {rule("acme", ">", `closed = "365d"`) + rule("*", "billing.>", `closed = "365d"`), 0, ""},
		"OtherTenants":         {rule("acme", ">", `closed = "7d"`) + rule("globex", ">", `unresolved = "never"`), 0, ""},
		"DisjointItemTypes":    {rule("*", "billing.>", `closed = "7d"`) + rule("acme", "orders.>", `unresolved = "never"`), 0, ""},
		"TailNeedsAToken":      {rule("*", "billing.>", `closed = "7d"`) + rule("*", "billing", `unresolved = "never"`), 0, ""},
		"TenantOneToken":       {rule("acme-eu_2", ">", `closed = "7d"`), 0, ""},
		"TenantWildcardInName": {rule("acme*", ">", `closed = "7d"`), 2, `tenant "acme*" holds a wildcard`},
		"TenantWithASpace":     {rule("acme ", ">", `closed = "7d"`), 2, `tenant "acme " holds a space`},
	} {
		t.Run(name, func(t *testing.T) {
			table, err := Parse("order.toml", []byte(tc.file))
			if tc.want == "" {
				require.NoError(t, err)
				require.NotEmpty(t, table.Retention().Rules)
				return
			}
			require.Error(t, err)
			var pe *PolicyError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.line, pe.Line, "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestPatternOverlaps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{">", "a", true},
		{"a.>", "a", false},
		{"a.>", "a.b.>", true},
		{"a.*.c", "a.>", true},
		{"a.*.c", "*.b.*", true},
		{"a.*.c", "a.b.d", false},
		{"a.*", "a.*.*", false},
		{"a.*", "*.b", true},
		{"a", "b", false},
	} {
		a, err := compilePattern(tc.a)
		require.NoError(t, err)
		b, err := compilePattern(tc.b)
		require.NoError(t, err)
		assert.Equal(t, tc.want, a.overlaps(b), "%s, %s", tc.a, tc.b)
		assert.Equal(t, tc.want, b.overlaps(a), "%s, %s", tc.b, tc.a)
	}
}
