package dlq

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAlertRulesUseExportedIngestSeries checks that every series of this
// package that docs/alerts.yml names (ingest, depth, age, the DLQ stream's
// limits, retention and the partition keeper) is one it
// exports: a rule on a misspelt series never fires, and nobody notices.
func TestAlertRulesUseExportedIngestSeries(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("../docs/alerts.yml")
	require.NoError(t, err)
	exported := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	km := newKeeperMetrics(nil)
	for _, c := range append(NewMetrics(prometheus.NewRegistry()).collectors(), NewDepthCollector(nil, nil), km.removed, km.runs, km.errors, km.lastPass) {
		c.Describe(ch)
	}
	close(ch)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		exported[fqName.FindStringSubmatch(d.String())[1]] = true
	}
	named := regexp.MustCompile(`quarantine_(ingest|ingested|malformed|depth|oldest_unresolved|dlq_stream|retention|partition_keeper)[a-z_]*`).FindAllString(string(rules), -1)
	require.NotEmpty(t, named)
	for _, n := range named {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
		assert.True(t, exported[base], "docs/alerts.yml names %s, which the console does not export", n)
	}
	for _, want := range []string{"quarantine_ingest_pending_messages", "quarantine_ingest_oldest_unacked_age_seconds",
		"quarantine_dlq_stream_limit_risk_ratio", "quarantine_partition_keeper_last_pass_timestamp_seconds"} {
		assert.True(t, exported[want], want)
	}
}
