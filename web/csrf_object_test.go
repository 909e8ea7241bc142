package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestCrossSitePostNamesTheObjectInItsTenant: a post another site started
// (someone's browser led to approve a replay request) is refused before
// its handler and audited under the signed-in person; when its path names
// an object, the row is the object's tenant's and names the object, so
// that tenant's auditors see what was tried on it, whether or not the
// person may see that tenant. The answer is the same refusal either way.
func TestCrossSitePostNamesTheObjectInItsTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	dl := seed(t, b, "acme", "email.send", "csrf-object", map[string][]string{dlq.HeaderOperationID: {"csrf-object-op"}})
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{dl}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	evil := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}

	for _, role := range []string{"acme:approver", "globex:approver"} {
		t.Run(role, func(t *testing.T) {
			c, who := b.SignIn(t, role)
			resp := b.Do(t, c, http.MethodPost, fmt.Sprintf("/replay/requests/%d/approve", req.ID), url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}}, evil)
			require.Equal(t, http.StatusForbidden, resp.Status)
			assert.Contains(t, resp.Body, "Cross-site request refused.")
			require.Equal(t, 1, b.AuditCount(t, `action = 'csrf.denied' AND actor_subject = $1`, who.Subject), "audited once")
			assert.Equal(t, 1, b.AuditCount(t, `action = 'csrf.denied' AND outcome = 'denied' AND actor_subject = $1 AND tenant = 'acme'
                AND object_type = 'replay_request' AND object_id = $2`, who.Subject, fmt.Sprint(req.ID)),
				"an acme row naming request %d", req.ID)
		})
	}
	r, err := b.Replays.Request(t.Context(), req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status, "nothing approved")
}
