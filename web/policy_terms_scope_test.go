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

// TestTenantViewerDoesNotSeeTermsVersion: a retention terms version is the
// SHA-256 of a text that holds every tenant's retention lines, so to
// someone who reads only some tenants' lines it would confirm, offline, a
// guess at the others' (their names and periods). Such a viewer sees no
// terms version, nor any start of one, on the Policy page (its note that
// this console's terms are not the active ones says since when, without
// versions), and /policy?version= answers every terms version, known or
// not, in full or by its start, as it answers one that was never active:
// it cannot test a guess. The replay policy version, whose rules every
// reader of the page reads whole, stays shown and found. Those who see
// every tenant see the terms versions and find them by name.
func TestTenantViewerDoesNotSeeTermsVersion(t *testing.T) {
	t.Parallel()
	b, _ := startWithPolicy(t, shippedPolicyAnd(t, ""))
	mine := b.Replays.Policy()
	other, err := replaypolicy.Parse("other.toml", shippedPolicyAnd(t, "\n[[retention.rule]]\ntenant = \"globex\"\nclosed = \"2d\"\n"))
	require.NoError(t, err)
	require.Equal(t, mine.Version(), other.Version(), "the rules are alike")
	require.NoError(t, replay.New(b.DB.Pool, replay.Config{Policy: func() *replaypolicy.Table { return other }}).ActivatePolicy(context.Background(), "console-7f9c-42"))
	ours, active := replay.RetentionVersion(mine.Retention()), replay.RetentionVersion(other.Retention())
	never := strings.Repeat("0", 64)

	for _, who := range []string{"acme:oncall", "acme:auditor", "acme:admin", "acme:approver"} {
		t.Run(strings.ReplaceAll(who, ":", "_"), func(t *testing.T) {
			c, _ := b.SignIn(t, who)
			page := b.Do(t, c, "GET", "/policy", nil, nil)
			require.Equal(t, http.StatusOK, page.Status)
			for _, v := range []string{ours, active} {
				assert.False(t, strings.Contains(strings.ToLower(page.Body), v[:8]), "no terms version %s, nor its start", v[:12])
			}
			doc := page.Doc(t)
			assert.Equal(t, mine.Version(), doc.Find(`[data-testid="policy-version"]`).Text(), "the replay policy version")
			note := text(doc.Find(`[data-testid="policy-retention-stale"]`))
			assert.Contains(t, note, "This console's retention terms are not the active ones, which are in force since")
			assert.Contains(t, note, "this console removes no dead letters")

			unknown := b.Do(t, c, "GET", "/policy?version="+never, nil, nil)
			require.Equal(t, http.StatusNotFound, unknown.Status)
			for _, v := range []string{active, active[:8], ours, ours[:12], strings.ToUpper(active)} {
				page := b.Do(t, c, "GET", "/policy?version="+v, nil, nil)
				assert.Equal(t, http.StatusNotFound, page.Status, "terms %s", v)
				assert.Equal(t, text(unknown.Doc(t).Find(`[data-testid="error-detail"]`)), text(page.Doc(t).Find(`[data-testid="error-detail"]`)),
					"terms %s are not found as terms never active are not", v)
			}
			page = b.Do(t, c, "GET", "/policy?version="+mine.Version()[:12], nil, nil)
			require.Equal(t, http.StatusOK, page.Status, "a replay policy version is found")
			assert.Equal(t, mine.Version(), page.Doc(t).Find(`[data-testid="policy-version"]`).Text())
		})
	}
	for _, who := range []string{"*:auditor", "*:admin"} {
		t.Run(strings.ReplaceAll(who, "*:", "every_"), func(t *testing.T) {
			c, _ := b.SignIn(t, who)
			page := b.Do(t, c, "GET", "/policy", nil, nil)
			require.Equal(t, http.StatusOK, page.Status)
			note := text(page.Doc(t).Find(`[data-testid="policy-retention-stale"]`))
			assert.Contains(t, note, "retention terms are version "+ours[:16]+"…")
			assert.Contains(t, note, "the active terms are version "+active[:16]+"…")
			for _, v := range []string{active, active[:8]} {
				page := b.Do(t, c, "GET", "/policy?version="+v, nil, nil)
				require.Equal(t, http.StatusOK, page.Status, v)
				doc := page.Doc(t)
				assert.Equal(t, active, doc.Find(`[data-testid="policy-version"]`).Text())
				assert.Contains(t, doc.Find(`[data-testid="retention"]`).Text(), "globex")
			}
		})
	}
}

// TestTenantViewerDoesNotSeeUnrecordedTermsVersion: the note that what
// the active terms say was not recorded names the version to those who
// see every tenant, and not to others.
func TestTenantViewerDoesNotSeeUnrecordedTermsVersion(t *testing.T) {
	t.Parallel()
	b, _ := startWithPolicy(t, shippedPolicyAnd(t, ""))
	old := strings.Repeat("cd", 32)
	_, err := b.DB.OwnerPool.Exec(context.Background(), `UPDATE retention_terms_versions SET superseded_at = now() WHERE superseded_at IS NULL`)
	require.NoError(t, err)
	_, err = b.DB.OwnerPool.Exec(context.Background(), `INSERT INTO retention_terms_versions (version, name, activated_by) VALUES ($1, 'old.toml', 'host-1')`, old)
	require.NoError(t, err)
	tenant, _ := b.SignIn(t, "acme:auditor")
	every, _ := b.SignIn(t, "*:auditor")

	page := b.Do(t, tenant, "GET", "/policy", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	note := text(page.Doc(t).Find(`[data-testid="policy-retention-not-recorded"]`))
	assert.Contains(t, note, "not recorded: the active retention terms were last active before the console kept what versions say (migration 0039)")
	assert.False(t, strings.Contains(strings.ToLower(page.Body), old[:8]), "no terms version, nor its start")

	page = b.Do(t, every, "GET", "/policy", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	note = text(page.Doc(t).Find(`[data-testid="policy-retention-not-recorded"]`))
	assert.Contains(t, note, "not recorded: retention terms "+old[:12]+" was last active before")
}
