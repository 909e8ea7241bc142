package dlq

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAlertRulesNoticeNoConsoleReporting (review rev-ops): every rule of
// docs/alerts.yml is computed from series the console itself exports. With
// no console reporting (every replica crash-looping on a bad POLICY_FILE
// after a deploy, NATS down at start, which serve does not wait for, or
// METRICS_ADDR left on loopback), every expression is empty and nothing
// fires, while dead letters pile up unstored in the DLQ stream until
// DLQ_MAX_AGE/DLQ_MAX_BYTES discards them. A rule on absent(...) or on the
// scrape's up series is what notices.
func TestAlertRulesNoticeNoConsoleReporting(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("../docs/alerts.yml")
	require.NoError(t, err)
	exprs := regexp.MustCompile(`(?m)^\s*expr:\s*(.+)$`).FindAllStringSubmatch(string(rules), -1)
	require.NotEmpty(t, exprs)
	found := false
	for _, e := range exprs {
		if strings.Contains(e[1], "absent(") || regexp.MustCompile(`\bup\b`).MatchString(e[1]) {
			found = true
		}
	}
	assert.True(t, found, "no rule of docs/alerts.yml fires when no console exports its series")
}
