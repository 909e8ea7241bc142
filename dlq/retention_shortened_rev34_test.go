package dlq_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRev34ShortenedTermsAreSaid: a deploy whose retention terms keep dead
// letters a shorter time than the active ones ("9d" typed for "90d")
// removed them at the keeper's first pass, at start, and said nothing but
// the versions before and after. The activation's audit row names what
// got shorter, and the service says it for the start to log loudly; terms
// that shorten nothing, or the same terms again, say nothing.
func TestRev34ShortenedTermsAreSaid(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	activate := func(name, terms string) *replay.Service {
		t.Helper()
		table, err := replaypolicy.Parse(name+".toml", []byte(termsRules+terms))
		require.NoError(t, err)
		svc := replay.New(r.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return table }})
		require.NoError(t, svc.ActivatePolicy(ctx, name))
		return svc
	}
	assert.Empty(t, activate("month", monthTerms).ShortenedTerms(), "the first terms shorten nothing")
	week := activate("week", weekTerms)
	shortened := week.ShortenedTerms()
	assert.Contains(t, shortened, "* > discarded: 30d → 7d", "the service says what got shorter")
	assert.Contains(t, shortened, "* > resolved: 30d → 7d")

	page, err := audit.List(ctx, r.db.Pool, audit.Filter{Action: replay.ActionRetentionTerms, Limit: audit.MaxLimit})
	require.NoError(t, err)
	var after struct {
		Shortened []string `json:"shortened"`
	}
	require.NoError(t, json.Unmarshal(page.Entries[0].After, &after))
	assert.Equal(t, shortened, after.Shortened, "the activation's audit row names it")

	assert.Empty(t, activate("week-again", weekTerms).ShortenedTerms(), "the same terms again change nothing")
	longer := activate("two-months", "\n[retention]\nclosed = \"60d\"\n")
	require.Equal(t, replay.RetentionVersion(mustTerms(t, "\n[retention]\nclosed = \"60d\"\n")), r.activeTerms(t), "new terms made active")
	assert.Empty(t, longer.ShortenedTerms(), "longer terms shorten nothing")
}

// mustTerms are the retention terms of a policy file of termsRules and terms.
func mustTerms(t *testing.T, terms string) *replaypolicy.Retention {
	t.Helper()
	table, err := replaypolicy.Parse("t.toml", []byte(termsRules+terms))
	require.NoError(t, err)
	return table.Retention()
}
