package audit_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixAnchorHeadWentBackIsAlerted: the gauges of the head's and the
// last signed checkpoint's seq show a cut only if a rule compares them
// with what Prometheus saw before, and on-call finds what to do in the
// runbook under the rule's name.
func TestFixAnchorHeadWentBackIsAlerted(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("../docs/alerts.yml")
	require.NoError(t, err)
	rule := regexp.MustCompile(`(?s)- alert: AuditHeadWentBack\n.*?\n\s*expr:\s*([^\n]+)`).FindStringSubmatch(string(rules))
	require.NotNil(t, rule, "docs/alerts.yml has the rule AuditHeadWentBack")
	for _, series := range []string{"quarantine_audit_checkpoint_seq", "quarantine_audit_head_seq"} {
		assert.Contains(t, rule[1], series+" < on() group_left max(max_over_time("+series+"[1d]",
			"AuditHeadWentBack compares %s with the highest seen before", series)
	}
	runbook, err := os.ReadFile("../docs/runbook.md")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^## AuditHeadWentBack\b`, string(runbook))
}
