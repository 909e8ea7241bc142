package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev34NoFormComesBackToADownload: an export link another site sent
// is refused with "start it again" (crossSiteGet), the person's own
// choice. But that refusal page's user menu held a time zone form whose
// return_to was the link itself: saving the time zone (no intent to
// export) answered 303 to the export, which the browser followed
// same-origin, past the refusal: an audit.export under the victim, with
// the attacker's filter. No form comes back to a download or a GET that
// writes: the refusal's form returns to the nearest page; a return_to,
// a Referer or a triage form's return_to naming one goes to a page.
func TestRev34NoFormComesBackToADownload(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	auditor, me := b.SignIn(t, "*:auditor")
	oncall, _ := b.SignIn(t, "acme:oncall")
	exports := func() int { return b.AuditCount(t, "action = 'audit.export' AND actor_subject = $1", me.Subject) }
	const export = "/audit/export.csv?outcome=denied"

	refused := b.Do(t, auditor, http.MethodGet, export, nil,
		map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Accept": "text/html"})
	require.Equal(t, http.StatusForbidden, refused.Status, refused.Body)
	back := timeZoneReturn(t, refused)
	assert.Equal(t, "/audit", back, "the refusal's time zone form returns to the page above the export")

	for _, to := range []string{export, "/audit/export.jsonl", "/static/../audit/export.csv?outcome=denied", "/static/..%2faudit/export.csv", back} {
		saved := b.Do(t, auditor, http.MethodPost, "/settings/time", url.Values{"time_zone": {"utc"}, "return_to": {to}}, nil)
		require.Equal(t, http.StatusSeeOther, saved.Status, saved.Body)
		want := "/"
		if to == back {
			want = back
		}
		assert.Equal(t, want, saved.Header.Get("Location"), "return_to %q", to)
	}
	assert.Zero(t, exports(), "nothing exported")

	id := seed(t, b, "acme", "orders.refund", "rev34-return", nil)
	payload := "/deadletters/" + strconv.FormatInt(id, 10) + "/payload"
	resp := b.Do(t, oncall, http.MethodPost, "/deadletters/"+strconv.FormatInt(id, 10)+"/discard", url.Values{"reason": {"dup"}},
		map[string]string{"Referer": b.URL() + payload})
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	assert.Equal(t, "/deadletters/"+strconv.FormatInt(id, 10), timeZoneReturn(t, resp), "a Referer naming a download is not taken")

	var fp string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT fingerprint FROM dead_letters WHERE id = $1`, id).Scan(&fp))
	snooze := b.Do(t, oncall, http.MethodPost, "/groups/snooze", url.Values{"tenant": {"acme"}, "group": {fp}, "for": {"4h"},
		"return_to": {payload}}, nil)
	require.Equal(t, http.StatusSeeOther, snooze.Status, snooze.Body)
	assert.Equal(t, "/groups", snooze.Header.Get("Location"), "a triage form's return_to naming a download goes to the groups page")
}
