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

// TestPolicyPageSaysRetentionTermsAreNotActive: once another process made
// other retention terms the active ones (the rules alike), the Policy page
// of a console still running its own says that it removes no dead letters;
// to those who see every tenant, with both versions and which process
// activated them, to others since when the active terms are, without
// versions (TestTenantViewerDoesNotSeeTermsVersion); its replay policy is
// still the active one.
func TestPolicyPageSaysRetentionTermsAreNotActive(t *testing.T) {
	t.Parallel()
	b, _ := startWithPolicy(t, shippedPolicyAnd(t, ""))
	admin, _ := b.SignIn(t, "*:admin")
	oncall, _ := b.SignIn(t, "acme:oncall")
	page := b.Do(t, admin, "GET", "/policy", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.Zero(t, page.Doc(t).Find(`[data-testid="policy-retention-stale"]`).Length(), "its terms are the active ones")

	shorter, err := replaypolicy.Parse("shorter.toml", shippedPolicyAnd(t, "\n[[retention.rule]]\ntenant = \"acme\"\nclosed = \"2d\"\n"))
	require.NoError(t, err)
	require.Equal(t, b.Replays.Policy().Version(), shorter.Version(), "the rules are alike")
	require.NoError(t, replay.New(b.DB.Pool, replay.Config{Policy: func() *replaypolicy.Table { return shorter }}).ActivatePolicy(context.Background(), "console-7f9c-42"))
	mine, active := replay.RetentionVersion(b.Replays.Policy().Retention()), replay.RetentionVersion(shorter.Retention())
	for _, tc := range []struct {
		name string
		c    *http.Client
		by   bool
	}{{"Admin", admin, true}, {"Oncall", oncall, false}} {
		t.Run(tc.name, func(t *testing.T) {
			page := b.Do(t, tc.c, "GET", "/policy", nil, nil)
			require.Equal(t, http.StatusOK, page.Status)
			doc := page.Doc(t)
			assert.Zero(t, doc.Find(`[data-testid="policy-stale"]`).Length(), "the rules are the active ones")
			note := doc.Find(`[data-testid="policy-retention-stale"]`)
			require.Equal(t, 1, note.Length(), page.Body)
			text := strings.Join(strings.Fields(note.Text()), " ")
			assert.Equal(t, tc.by, strings.Contains(text, "retention terms are version "+mine[:16]+"…"), text)
			assert.Equal(t, tc.by, strings.Contains(text, "the active terms are version "+active[:16]+"…"), text)
			assert.Equal(t, !tc.by, strings.Contains(text, "This console's retention terms are not the active ones, which are in force since"), text)
			assert.Contains(t, text, "this console removes no dead letters")
			assert.NotContains(t, text, " .", "the sentence ends at its time (a line break before its period was a space)")
			assert.NotContains(t, text, " ,", "by whom follows its time (a line break before its comma was a space)")
			assert.Equal(t, tc.by, strings.Contains(text, "activated by console-7f9c-42"), text)
		})
	}
}
