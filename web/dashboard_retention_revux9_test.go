package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// TestRevUx9DashboardRetentionIsNotTheActiveTerms: another process made
// retention terms with an acme rule ("closed" kept 2d) the active ones.
// The Policy page of this console shows the active terms and says that
// this console's own terms are not active (it removes no dead letters).
// The dashboard's "Retention and storage" card, on the same console, still
// summarises this console's own terms: no rule for acme, nothing said
// about them not being in force. An acme on-call reads, on the home page,
// retention that is not the one removing their dead letters.
func TestRevUx9DashboardRetentionIsNotTheActiveTerms(t *testing.T) {
	t.Parallel()
	b, _ := startWithPolicy(t, shippedPolicyAnd(t, ""))
	oncall, _ := b.SignIn(t, "acme:oncall")
	shorter, err := replaypolicy.Parse("shorter.toml", shippedPolicyAnd(t, "\n[[retention.rule]]\ntenant = \"acme\"\nclosed = \"2d\"\n"))
	require.NoError(t, err)
	require.NoError(t, replay.New(b.DB.Pool, replay.Config{Policy: func() *replaypolicy.Table { return shorter }}).ActivatePolicy(context.Background(), "console-7f9c-42"))

	policy := b.Do(t, oncall, "GET", "/policy", nil, nil)
	require.Equal(t, http.StatusOK, policy.Status)
	pd := policy.Doc(t)
	require.Equal(t, 1, pd.Find(`[data-testid="policy-retention-stale"]`).Length(), "the Policy page says this console's terms are not active")
	require.Equal(t, 2, pd.Find(`[data-testid="retention-rule"]`).Length(), "and lists the active terms: acme's rule and the defaults")

	dash := b.Do(t, oncall, "GET", "/", nil, nil)
	require.Equal(t, http.StatusOK, dash.Status, dash.Body)
	card := strings.Join(strings.Fields(dash.Doc(t).Find(`[data-testid="storage"]`).Text()), " ")
	summary := textOf(dash.Doc(t), `[data-testid="retention-summary"]`)
	assert.True(t, strings.Contains(summary, "1 rule") || strings.Contains(card, "not the active"),
		"the dashboard's retention is the one in force (acme's rule), or says its own is not: %q", card)
}
