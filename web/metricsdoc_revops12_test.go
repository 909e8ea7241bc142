package web_test

import (
	"bufio"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOps12EveryExportedSeriesIsDocumented (review revops12): README.md
// sends the operator to docs/architecture.md#metrics for "every series",
// and the runbook's entries name series by what that table says they are.
// Every quarantine_* series a running `serve` exports (scraped from its
// METRICS_ADDR, with a watched stream that does not exist so that the
// per-watched-stream series is there too) must have a row in that table,
// and every label it carries must be named in the row's labels column: a
// series missing from the table is one an operator building a dashboard
// or a rule of their own does not know exists, or reads with the wrong
// labels.
func TestRevOps12EveryExportedSeriesIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/architecture.md")
	require.NoError(t, err)
	section := string(doc)
	start := strings.Index(section, "\n## Metrics")
	require.GreaterOrEqual(t, start, 0, "docs/architecture.md has a Metrics section")
	section = section[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	// Each table row: | `series`, `series` | labels | what |
	documented := map[string]string{} // series -> its labels column
	name := regexp.MustCompile("`(quarantine_[a-z_]+)`")
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			documented[m[1]] = cells[2]
		}
	}
	require.NotEmpty(t, documented, "the Metrics table of docs/architecture.md was read")

	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(c *app.Config) {
		c.Watch = []dlq.WatchStream{{Name: "NOSUCHSTREAM"}}
		c.IngestTuning = func(ic *dlq.IngestConfig) { ic.HealthEvery = 100 * time.Millisecond }
	}})

	exported := map[string]map[string]bool{} // series -> label names
	scrape := func() {
		resp, err := http.Get(b.MetricsURL())
		require.NoError(t, err)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		series := regexp.MustCompile(`^(quarantine_[a-z_]+?)(_bucket|_sum|_count)?(\{([^}]*)\})? `)
		label := regexp.MustCompile(`([a-z_]+)="`)
		for sc.Scan() {
			m := series.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			n := m[1]
			if _, ok := documented[m[1]+m[2]]; ok {
				n = m[1] + m[2] // a name that itself ends so, not a histogram's part
			}
			if exported[n] == nil {
				exported[n] = map[string]bool{}
			}
			for _, l := range label.FindAllStringSubmatch(m[4], -1) {
				if l[1] != "le" {
					exported[n][l[1]] = true
				}
			}
		}
	}
	wait.Until(t, "the watched stream's series to be exported", 30*time.Second, func() bool {
		scrape()
		return exported["quarantine_ingest_watched_stream_missing"] != nil
	})
	require.Greater(t, len(exported), 20, "the console's series were scraped")

	for n, labels := range exported {
		cell, ok := documented[n]
		if !assert.True(t, ok, "%s is exported by serve but has no row in docs/architecture.md's Metrics table", n) {
			continue
		}
		for l := range labels {
			assert.Regexp(t, `\b`+l+`\b`, cell, "%s carries label %q, which its row in docs/architecture.md does not name", n, l)
		}
	}
}
