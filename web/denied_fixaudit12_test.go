package web_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixAudit12CrossOriginAttemptOfAnAbandonedRequestIsAudited: the other
// path to a denial row, http.CrossOriginProtection's (crossOriginDenied),
// records a cross-site POST of a signed-in person's browser whose client
// hung up at once, as the route's refusal does.
func TestFixAudit12CrossOriginAttemptOfAnAbandonedRequestIsAudited(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, who := b.SignIn(t, "acme:oncall")
	cookie := b.SessionCookie(t, client)
	addr := strings.TrimPrefix(b.URL(), "http://")
	denied := func() int {
		return b.AuditCount(t, `action = 'csrf.denied' AND actor_subject = $1`, who.Subject)
	}
	const tries = 5 // within the per-person allowance of cross-site refusals
	for range tries {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = fmt.Fprintf(conn, "POST /admin/bindings HTTP/1.1\r\nHost: %s\r\nOrigin: https://evil.example\r\nSec-Fetch-Site: cross-site\r\n"+
			"Cookie: %s=%s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 0\r\n\r\n",
			addr, cookie.Name, cookie.Value)
		require.NoError(t, err)
		require.NoError(t, conn.Close())
	}
	wait.For(t, fmt.Sprintf("%d csrf.denied rows for the abandoned cross-site attempts", tries), 10*time.Second, func() error {
		if n := denied(); n < tries {
			return fmt.Errorf("%w: %d of the %d abandoned attempts are in the audit log", wait.ErrNotYet, n, tries)
		}
		return nil
	})
}

// TestFixAudit12RolelessRefusalsAreLimitedPerPerson: a person without a
// role is refused every page, and each refusal is theirs in the audit log
// ("holds no role", the route), GETs too, but under the per-person limit
// cross-site refusals use: a browser left reloading a page does not grow
// the log without end, and the next row written says how many were not.
func TestFixAudit12RolelessRefusalsAreLimitedPerPerson(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, who := b.SignIn(t, "engineering")

	home := b.Do(t, client, http.MethodGet, "/", nil, nil)
	require.Equal(t, http.StatusForbidden, home.Status)
	assert.Contains(t, home.Body, "No access")
	assert.Equal(t, 1, b.AuditCount(t, `action = 'authz.denied' AND outcome = 'denied' AND actor_subject = $1
        AND reason LIKE 'holds no role; needs a role for route GET /%'`, who.Subject), "the refused GET / is audited")
	list := b.Do(t, client, http.MethodGet, "/audit?"+url.Values{"tenant": {"acme"}}.Encode(), nil, nil)
	require.Equal(t, http.StatusForbidden, list.Status)
	assert.Equal(t, 1, b.AuditCount(t, `actor_subject = $1 AND reason LIKE 'holds no role; needs audit:read for route GET /audit%'`, who.Subject))

	const flood = 30
	for range flood {
		require.Equal(t, http.StatusForbidden, b.Do(t, client, http.MethodGet, "/", nil, nil).Status)
	}
	rows := b.AuditCount(t, `outcome = 'denied' AND actor_subject = $1`, who.Subject)
	assert.Less(t, rows, flood, "a person without a role reloading a page is audited under the per-person limit")
	assert.GreaterOrEqual(t, rows, 10, "the limit's burst is written")
}
