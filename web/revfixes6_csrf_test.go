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

// TestRevFixes6CrossSitePostsAreNotLimited: a page on a sibling site
// (Sec-Fetch-Site: same-site, which the SameSite=Lax session cookie goes
// with) makes a signed-in person's browser post an approval of acme's
// replay request again and again. Each post is refused, and each writes a
// csrf.denied row, now in acme's log after a lookup of the request
// (crossOriginDenied, crossOriginTried): unlike every other refusal
// another site started (appendDenied, authz.CrossSiteDenials: a burst of
// 10, then one a minute), these rows are not limited, so another site
// grows a tenant's permanent log at will under the person's name.
func TestRevFixes6CrossSitePostsAreNotLimited(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	dl := seed(t, b, "acme", "email.send", "revfixes6-csrf", map[string][]string{dlq.HeaderOperationID: {"revfixes6-csrf-op"}})
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{dl}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	victim, who := b.SignIn(t, "acme:viewer")
	sibling := map[string]string{"Origin": "https://other.example", "Sec-Fetch-Site": "same-site"}
	const posts = 30
	for range posts {
		resp := b.Do(t, victim, http.MethodPost, fmt.Sprintf("/replay/requests/%d/approve", req.ID), url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}}, sibling)
		require.Equal(t, http.StatusForbidden, resp.Status)
	}
	n := b.AuditCount(t, `action = 'csrf.denied' AND actor_subject = $1`, who.Subject)
	require.Positive(t, n, "the refusals are audited")
	assert.LessOrEqual(t, n, 11, "%d posts another site started wrote %d rows into acme's log: they are limited per person as other such refusals are", posts, n)
}
