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
