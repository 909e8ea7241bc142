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

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestFixAudit13AbandonedAttemptsOfEveryLocatorAreAudited: every locator
// reads what the request names whether or not the client still waits
// (Server.find), so an attempt on another tenant's object is recorded in
// that tenant however soon the client hangs up: a dead letter's page (its
// locator reads the whole page), a replay request, and a selection of
// another tenant's dead letters (refused ids, audited in their tenant).
func TestFixAudit13AbandonedAttemptsOfEveryLocatorAreAudited(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	id := testfactory.DeadLetter(t, b.DB.OwnerPool, testfactory.Letter{Tenant: "globex", MsgID: "fa13-gx-1"})
	_, globex := b.SignIn(t, "globex:oncall")
	req := testfactory.Request(t, b.Replays, globex.Actor, []int64{id}, replay.SubmitInput{Reason: "fa13"})
	client, who := b.SignIn(t, "acme:oncall")
	dl, rq := strconv.FormatInt(id, 10), strconv.FormatInt(req.ID, 10)
	for _, tc := range []struct {
		name, method, path, body, objectType, objectID string
	}{
		{"DeadLetterPage", http.MethodGet, "/deadletters/" + dl, "", "dead_letter", dl},
		{"ReplayRequest", http.MethodGet, "/replay/requests/" + rq, "", "replay_request", rq},
		{"Selection", http.MethodPost, "/deadletters/discard", "id=" + dl, "dead_letter", dl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			denied := func() int {
				return b.AuditCount(t, `action = 'authz.denied' AND outcome = 'denied' AND actor_subject = $1 AND tenant = 'globex'
                    AND object_type = $2 AND object_id = $3 AND request_id <> ''`, who.Subject, tc.objectType, tc.objectID)
			}
			before := denied()
			cookie := b.SessionCookie(t, client)
			addr := strings.TrimPrefix(b.URL(), "http://")
			const tries = 3
			for range tries {
				conn, err := net.Dial("tcp", addr)
				require.NoError(t, err)
				_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nSec-Fetch-Site: same-origin\r\n"+
					"Cookie: %s=%s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s",
					tc.method, tc.path, addr, b.URL(), cookie.Name, cookie.Value, len(tc.body), tc.body)
				require.NoError(t, err)
				require.NoError(t, conn.Close()) // the client does not wait for the answer
			}
			wait.For(t, fmt.Sprintf("%d denied rows in globex for the abandoned %s %s", tries, tc.method, tc.path), 10*time.Second, func() error {
				if n := denied() - before; n < tries {
					return fmt.Errorf("%w: %d of the %d abandoned attempts are in the audit log", wait.ErrNotYet, n, tries)
				}
				return nil
			})
		})
	}
}
