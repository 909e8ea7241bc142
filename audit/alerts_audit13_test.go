package audit_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevAudit13UnverifiedCheckpointAlertExists: docs/architecture.md's
// Metrics table and docs/access.md ("quarantine_audit_unverified_checkpoints
// counts them (alert above 0)") promise an alert when a checkpoint newer
// than the last signed one does not verify (someone with the database's
// credentials inserted it: the one sign of tampering the console itself
// measures), but docs/alerts.yml, the rules an operator installs, has no
// expression on the series: a forged checkpoint shows in red on the audit
// page only, for whoever opens it.
func TestRevAudit13UnverifiedCheckpointAlertExists(t *testing.T) {
	b, err := os.ReadFile("../docs/alerts.yml")
	require.NoError(t, err)
	// Any line of a rule (not a comment) naming the series: an expr on
	// one line or in a block.
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if l := strings.TrimSpace(line); !strings.HasPrefix(l, "#") && strings.Contains(l, "quarantine_audit_unverified_checkpoints") {
			found = true
		}
	}
	assert.True(t, found, "no rule of docs/alerts.yml fires on quarantine_audit_unverified_checkpoints > 0, which the docs say alerts")
}
