package web_test

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevAudit13AbandonedCrossTenantAttemptIsAudited: round 12 made a
// refusal's rows independent of the client waiting (audit.Detached), for
// refusals decided before the route's locator runs (auditRouteDenied). A
// refusal the locator decides, an object of a tenant the caller may not
// see (locate -> notFoundDeniedIn), first reads the object's tenant with
// the request's context (deadLetterLocator's TenantOf,
// c.Request().Context()): an on-call engineer of acme who reads, or posts
// a discard of, a globex dead letter and drops the connection at once gets
// that read cancelled ("tenant of dead letter N: context canceled", a 500
// nobody receives), and the attempt on another tenant's dead letter leaves
// no row for globex's auditors. The same holds for every locator (replay
// requests, bindings, selections: locate's AppendBatchFunc of a refused
// selection is fine, its find is not).
func TestRevAudit13AbandonedCrossTenantAttemptIsAudited(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	id := testfactory.DeadLetter(t, b.DB.OwnerPool, testfactory.Letter{Tenant: "globex", MsgID: "gx-1"})
	client, who := b.SignIn(t, "acme:oncall")
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/deadletters/" + strconv.FormatInt(id, 10) + "/error.txt"},
		{http.MethodPost, "/deadletters/" + strconv.FormatInt(id, 10) + "/discard"},
	} {
		t.Run(tc.method, func(t *testing.T) { abandonedDenials13(t, b, client, tc.method, tc.path, who.Subject, id) })
	}
}

// abandonedDenials13 asks method path as the person of client once and
// waits for the answer, then five times dropping the connection at once,
// and waits for a denied row in globex for each.
func abandonedDenials13(t *testing.T, b *testfactory.Console, client *http.Client, method, path, subject string, id int64) {
	cookie := b.SessionCookie(t, client)
	addr := strings.TrimPrefix(b.URL(), "http://")
	t.Helper()
	{ // one attempt, then the abandoned ones
		denied := func() int {
			return b.AuditCount(t, `action = 'authz.denied' AND outcome = 'denied' AND actor_subject = $1 AND tenant = 'globex'
                AND object_type = 'dead_letter' AND object_id = $2 AND request_id <> ''`, subject, strconv.FormatInt(id, 10))
		}
		before := denied()
		// Precondition: an attempt whose answer is read is audited in globex.
		resp := b.Do(t, client, method, path, nil, nil)
		require.Equal(t, http.StatusNotFound, resp.Status, path)
		require.Equal(t, before+1, denied(), "precondition: %s %s of globex's dead letter by acme's on-call is audited", method, path)

		const tries = 5
		for range tries {
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nSec-Fetch-Site: same-origin\r\n"+
				"Cookie: %s=%s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 0\r\n\r\n",
				method, path, addr, b.URL(), cookie.Name, cookie.Value)
			require.NoError(t, err)
			require.NoError(t, conn.Close()) // the client does not wait for the answer
		}
		wait.For(t, fmt.Sprintf("%d more denied rows in globex for the abandoned %s %s", tries, method, path), 10*time.Second, func() error {
			if n := denied() - before - 1; n < tries {
				return fmt.Errorf("%w: %d of the %d abandoned attempts are in the audit log", wait.ErrNotYet, n, tries)
			}
			return nil
		})
	}
}
