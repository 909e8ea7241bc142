package audit

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevOps13UnverifiedCheckpointsAreAlerted: the collector exports
// quarantine_audit_unverified_checkpoints, checkpoints newer than the
// last one that verifies whose signature does not: someone with the
// runtime role's credentials inserted them (a forged head, or one dated
// ahead to put off the schedule). docs/architecture.md:857 says "alert
// above 0", but no rule of docs/alerts.yml reads the series: the one
// signal of a forged checkpoint pages no one.
func TestRevOps13UnverifiedCheckpointsAreAlerted(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("../docs/alerts.yml")
	require.NoError(t, err)
	exprs := regexp.MustCompile(`(?m)^\s*expr:\s*(.+)$`).FindAllStringSubmatch(string(rules), -1)
	require.NotEmpty(t, exprs)
	found := false
	for _, e := range exprs {
		if strings.Contains(e[1], "quarantine_audit_unverified_checkpoints") {
			found = true
		}
	}
	assert.True(t, found, "no rule of docs/alerts.yml fires on quarantine_audit_unverified_checkpoints")
}
