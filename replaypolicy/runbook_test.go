package replaypolicy

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRunbookExplainsEveryCheck: the on-call runbook's table of checks
// names every check the rules apply, each in a row of its own section
// saying what it means and what to do, so that a check added to Checks
// is not left out of what the on-call reads.
func TestRunbookExplainsEveryCheck(t *testing.T) {
	doc, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## What an item's check means, and what to do"
	_, section, ok := strings.Cut(string(doc), heading)
	if !ok {
		t.Fatalf("docs/runbook.md has no section %q", heading)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 || strings.TrimSpace(cells[2]) == "" || strings.TrimSpace(cells[3]) == "" {
			t.Errorf("row %q does not say what its check means and what to do", line)
			continue
		}
		for _, name := range strings.Split(cells[1], ",") {
			name = strings.TrimSpace(name)
			name, _, _ = strings.Cut(name, " ")
			rows[strings.Trim(name, "`")] = true
		}
	}
	for _, c := range Checks() {
		if !rows[c] {
			t.Errorf("the runbook's table of checks has no row for %q", c)
		}
	}
	for name := range rows {
		if !slices.Contains(Checks(), name) {
			t.Errorf("the runbook's table of checks has a row for %q, which is no check", name)
		}
	}
}
