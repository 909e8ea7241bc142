package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/logs"
)

// TestAnonymousDenialsDoNotGrowAudit floods the console as a stranger would:
// cross-site POSTs to every kind of path with huge headers, and sign-in
// callbacks without a state. None of it reaches the audit log; all of it is
// counted, and the log lines stay bounded. A signed-in person's refused
// cross-site POST is still audited.
func TestAnonymousDenialsDoNotGrowAudit(t *testing.T) {
	t.Parallel()
	logged := &logs.Buffer{}
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Log: logged})
	anon := testfactory.NoFollow(nil)
	before := b.AuditCount(t, "true")
	big := strings.Repeat("A", 16<<10)
	const n = 150
	for i := range n {
		path := []string{"/admin/bindings", "/replay", fmt.Sprintf("/no/such/path/%d", i)}[i%3]
		resp := b.Do(t, anon, "POST", path, url.Values{"x": {"y"}}, map[string]string{
			"Origin": "https://evil.example/" + big, "Sec-Fetch-Site": "cross-site", "User-Agent": big, "X-Request-ID": big,
		})
		require.Equal(t, http.StatusForbidden, resp.Status)
		resp = b.Do(t, anon, "GET", "/auth/callback?code=x&state=forged-"+fmt.Sprint(i), nil, map[string]string{"User-Agent": big})
		require.Equal(t, http.StatusBadRequest, resp.Status)
	}
	assert.Equal(t, before, b.AuditCount(t, "true"), "strangers wrote nothing to the audit log")
	assert.Equal(t, float64(n), b.Denials.Total(authz.DenialCrossOrigin))
	assert.Equal(t, float64(n), b.Denials.Total(authz.DenialLoginState))

	logText := logged.String()
	logLines := strings.Count(logText, "refused an anonymous request")
	assert.Less(t, logLines, 2*n, "log lines are rate-limited")
	assert.Positive(t, logLines)
	for _, line := range strings.Split(logText, "\n") {
		assert.Less(t, len(line), 2000, "every logged client value is cut short")
	}

	// Signed in, the same refusal is someone's act: audited, with bounded
	// fields.
	c, u := b.SignIn(t, "*:admin")
	resp := b.Do(t, c, "POST", "/admin/bindings", url.Values{"email": {"x@example.com"}, "role": {"admin"}, "tenant": {"*"}},
		map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "User-Agent": big})
	require.Equal(t, http.StatusForbidden, resp.Status)
	assert.Equal(t, 1, b.AuditCount(t, "action = 'csrf.denied' AND actor_subject = $1 AND octet_length(user_agent) <= 512", u.Subject))
}
