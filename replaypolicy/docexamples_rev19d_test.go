package replaypolicy_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevDocs19PolicyExamplesParse: every TOML example the docs give for
// the policy file parses, added to the shipped file, and means what the
// text beside it says.
func TestRevDocs19PolicyExamplesParse(t *testing.T) {
	t.Parallel()
	base, err := os.ReadFile("../dev/policy.toml")
	require.NoError(t, err)
	// The shipped file minus its own [retention] section (the examples bring theirs).
	shipped := string(base)
	shipped = shipped[:strings.Index(shipped, "\n[retention]")]

	doc, err := os.ReadFile("../docs/replay.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, blocks)
	for i, b := range blocks {
		tbl, err := replaypolicy.Parse("docs/replay.md example", []byte(shipped+"\n"+b[1]))
		if !assert.NoError(t, err, "example %d", i+1) {
			continue
		}
		r := tbl.Retention()
		k, ok := r.For("acme", "billing.invoice", "discarded")
		require.True(t, ok)
		assert.Equal(t, "365d", k.String(), "the rule decides all of its periods (docs/replay.md)")
		k, _ = r.For("globex", "billing.invoice", "discarded")
		assert.Equal(t, "7d", k.String(), "a status's own key wins over its group's")
	}

	// dev/policy.toml's own commented example of [[retention.rule]].
	m := regexp.MustCompile(`(?m)^# \[\[retention\.rule\]\]\n(?:#.*\n?)*`).FindString(string(base))
	require.NotEmpty(t, m)
	example := regexp.MustCompile(`(?m)^# ?`).ReplaceAllString(m, "")
	_, err = replaypolicy.Parse("dev/policy.toml example", []byte(string(base)+"\n"+example))
	assert.NoError(t, err)
}
