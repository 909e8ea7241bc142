package replaypolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevOps8RetentionRuleNeverMatchingIsRefused: [[rule]] refuses a rule
// an earlier one shadows ("put the narrower rule first"), because the
// first match wins. [[retention.rule]] is first-match-wins too (docs/
// replay.md), but a retention rule that an earlier, wider one covers is
// accepted silently: the auditors' "keep acme's billing a year" never
// applies, and the keeper deletes those dead letters after the wide rule's
// period. The file must be refused, naming the rule and the earlier one.
func TestRevOps8RetentionRuleNeverMatchingIsRefused(t *testing.T) {
	t.Parallel()
	src := `
[retention]
closed = "30d"

[[retention.rule]]
tenant = "*"
item_type = ">"
discarded = "7d"

[[retention.rule]]
tenant = "acme"
item_type = "billing.>"
closed = "365d"
`
	table, err := Parse("p.toml", []byte(src))
	if err == nil {
		k, ok := table.Retention().For("acme", "billing.invoice", "replayed")
		require.True(t, ok)
		assert.Failf(t, "a retention rule that can never match was accepted",
			"retention.rule 2 (acme, billing.>, closed 365d) is covered by rule 1 (*, >): acme's replayed billing dead letters are kept %s, not 365d", k)
		return
	}
	var pe *PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 10, pe.Line, "the error names the line of the rule that can never match: %v", err)
	assert.Contains(t, err.Error(), "retention.rule 2")
}

// TestRevOps8RetentionRuleTenantThatIsNoTenantIsRefused: a retention
// rule's tenant is "*" (any) or a tenant name, which is one subject token
// (dlq.<tenant>.<item_type>). item_type takes NATS globs, so an operator
// writes tenant = ">" for "every tenant", or "acme.*": Parse accepts both,
// and the rule matches no dead letter at all, silently; the dead letters it
// was meant to keep go at the section's period. A tenant that can never be
// a tenant must be refused with the line and field.
func TestRevOps8RetentionRuleTenantThatIsNoTenantIsRefused(t *testing.T) {
	t.Parallel()
	for _, tenant := range []string{">", "acme.*", "acme.eu"} {
		src := "[retention]\nclosed = \"30d\"\n\n[[retention.rule]]\ntenant = \"" + tenant + "\"\nitem_type = \"billing.>\"\nclosed = \"365d\"\n"
		_, err := Parse("p.toml", []byte(src))
		if !assert.Error(t, err, "tenant %q can never match a dead letter's tenant, yet the file is accepted", tenant) {
			continue
		}
		var pe *PolicyError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, 5, pe.Line, "%v", err)
		assert.Equal(t, "tenant", pe.Key, "%v", err)
	}
}
