package web_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevAudit12DeniedAttemptOfAnAbandonedRequestIsAudited: an on-call
// engineer posts to /admin/bindings (to bind themselves admin) and drops
// the connection as soon as the request is sent. Every denied attempt is
// to be audited, but the denial rows are written with the request's
// context (web/middleware.go appendDenied: audit.AppendBatchFunc(
// c.Request().Context(), ...), as the session read before it), which
// net/http cancels when the client goes: the append fails ("audit denied
// access": a log line only) and the attempt leaves no trace. Whoever
// tries what they may not do, and learns the result from a later page
// (is the binding there?), can make every try invisible to the auditors.
// The rows of a refusal must not depend on the client waiting for the
// answer (context.WithoutCancel, as auditExportFailed does).
func TestRevAudit12DeniedAttemptOfAnAbandonedRequestIsAudited(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, who := b.SignIn(t, "acme:oncall")
	cookie := b.SessionCookie(t, client)
	addr := strings.TrimPrefix(b.URL(), "http://")

	// Precondition: an attempt whose answer is read is audited.
	resp := b.Do(t, client, http.MethodPost, "/admin/bindings", nil, nil)
	require.Equal(t, http.StatusForbidden, resp.Status)
	denied := func() int {
		return b.AuditCount(t, `action = 'authz.denied' AND actor_subject = $1 AND reason LIKE '%/admin/bindings%'`, who.Subject)
	}
	require.Equal(t, 1, denied(), "precondition: a refused POST /admin/bindings is audited")

	const tries = 10
	for range tries {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = fmt.Fprintf(conn, "POST /admin/bindings HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nSec-Fetch-Site: same-origin\r\n"+
			"Cookie: %s=%s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 0\r\n\r\n",
			addr, b.URL(), cookie.Name, cookie.Value)
		require.NoError(t, err)
		require.NoError(t, conn.Close()) // the client does not wait for the answer
	}
	// The handlers of the abandoned requests run on; each refusal should
	// be in the log once they have.
	wait.For(t, fmt.Sprintf("%d more authz.denied rows for the abandoned attempts", tries), 10*time.Second, func() error {
		if n := denied() - 1; n < tries {
			return fmt.Errorf("%w: %d of the %d abandoned attempts are in the audit log", wait.ErrNotYet, n, tries)
		}
		return nil
	})
}
