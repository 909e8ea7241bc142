package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestCrossSitePostWithASessionSignedOutEverywhereIsAStrangers: once an
// administrator signs a person out everywhere, a cross-site post carrying
// the cookie of one of their sessions (a stolen one) is refused as an
// anonymous client's (counted in quarantine_anonymous_denials_total, not
// audited), not from the memory of the person's refusals as theirs, though
// they were over the limit and that session remembered.
func TestCrossSitePostWithASessionSignedOutEverywhereIsAStrangers(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	admin, _ := b.SignIn(t, "*:admin")
	laptop, victim := b.SignIn(t, "acme:oncall")
	phone, _ := b.SignInAs(t, testfactory.Again(victim), "acme:oncall")
	post := func(c *http.Client) {
		t.Helper()
		resp := b.Do(t, c, http.MethodPost, "/audit/verify", url.Values{}, crossSite)
		require.Equal(t, http.StatusForbidden, resp.Status)
		require.Contains(t, resp.Body, "Cross-site request refused.")
	}
	for b.AuditCount(t, `action = 'csrf.denied' AND actor_subject = $1`, victim.Subject) < 10 {
		post(laptop)
	}
	post(laptop) // over the limit: both sessions remembered
	post(phone)

	form := url.Values{"issuer": {victim.Issuer}, "subject": {victim.Subject}}
	resp := b.Do(t, admin, http.MethodPost, "/admin/sessions/revoke", form, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	series := `quarantine_anonymous_denials_total{kind="cross_origin"}`
	before := metric(t, b, series)
	post(laptop)
	post(phone)
	assert.Equal(t, before+2, metric(t, b, series), "cross-site posts with the cookies of sessions ended by an administrator are a stranger's")
}
