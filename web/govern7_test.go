package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// missingDeadLetter is an id no test stores a dead letter under.
const missingDeadLetter = "987654321012"

// TestGovern7RouteRefusedSelectionNamesEveryIDTried: a viewer of acme (no
// right to discard or request replays anywhere) posts a selection of an
// acme dead letter and an id of no dead letter. The route refuses it (403)
// and its rows name what was tried: the acme dead letter in an acme row,
// and the id of no dead letter in a row outside any tenant (where a probe
// that names nothing found is recorded), never in acme's row: that it is
// no tenant's would tell acme's auditors something of other tenants' ids.
func TestGovern7RouteRefusedSelectionNamesEveryIDTried(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	acme := fmt.Sprint(seed(t, b, "acme", "search.index_update", "g7-route-sel", nil))

	for _, path := range []string{"/deadletters/discard", "/replay"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			viewer, who := b.SignIn(t, "acme:viewer")
			form := url.Values{"id": {acme, missingDeadLetter}, "reason": {"dup"}, "confirmed": {"1"}}
			resp := b.Do(t, viewer, http.MethodPost, path, form, nil)
			require.Equal(t, http.StatusForbidden, resp.Status, resp.Body)

			denied := `action = 'authz.denied' AND outcome = 'denied' AND actor_subject = $1 AND object_type = 'dead_letter'`
			assert.Equal(t, 1, b.AuditCount(t, denied+` AND tenant = 'acme' AND object_id = $2`, who.Subject, acme),
				"an acme row naming acme's dead letter alone")
			// Ids of no dead letter are a refused selection (dlq.RefusedIDs.Events).
			missing := `action = 'authz.denied' AND outcome = 'denied' AND actor_subject = $1 AND object_type = 'dead_letters'`
			assert.Equal(t, 1, b.AuditCount(t, missing+` AND tenant = '' AND object_id = $2`, who.Subject, missingDeadLetter),
				"a row outside any tenant naming the id of no dead letter")
			assert.Equal(t, 2, b.AuditCount(t, `outcome = 'denied' AND actor_subject = $1`, who.Subject), "no other refusal")
		})
	}
}

// crossSite are the headers of a post another site's page started.
var crossSite = map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}

// TestGovern7CrossSiteSelectionPostNamesTheDeadLettersInTheirTenants: a
// post another site started that selects dead letters of acme, of globex
// and an id of no dead letter is refused before its handler, whatever the
// signed-in person may see, and its csrf.denied rows name what it selected
// as a route's own refusal would: one row per tenant naming that tenant's
// dead letters, the id of no dead letter outside any tenant. The rows of
// one post count once against the person's limit of such refusals.
func TestGovern7CrossSiteSelectionPostNamesTheDeadLettersInTheirTenants(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	acmeID := seed(t, b, "acme", "search.index_update", "g7-csrf-sel-acme", nil)
	acme := fmt.Sprint(acmeID)
	globex := fmt.Sprint(seed(t, b, "globex", "search.index_update", "g7-csrf-sel-globex", nil))
	form := url.Values{"id": {acme, globex, missingDeadLetter}, "reason": {"dup"}, "confirmed": {"1"}}

	for _, path := range []string{"/deadletters/discard", "/replay"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			client, who := b.SignIn(t, "acme:oncall")
			resp := b.Do(t, client, http.MethodPost, path, form, crossSite)
			require.Equal(t, http.StatusForbidden, resp.Status)
			assert.Contains(t, resp.Body, "Cross-site request refused.")

			// Ids of no dead letter are a refused selection, object dead_letters (dlq.RefusedIDs.Events).
			denied := `action = 'csrf.denied' AND outcome = 'denied' AND actor_subject = $1
                AND object_type = CASE WHEN $2 = '' THEN 'dead_letters' ELSE 'dead_letter' END`
			for tenant, id := range map[string]string{"acme": acme, "globex": globex, "": missingDeadLetter} {
				assert.Equal(t, 1, b.AuditCount(t, denied+` AND tenant = $2 AND object_id = $3`, who.Subject, tenant, id),
					"a row in tenant %q naming %s alone", tenant, id)
			}
			assert.Equal(t, 3, b.AuditCount(t, `outcome = 'denied' AND actor_subject = $1`, who.Subject), "no other refusal: no row of the route")
		})
	}
	d, err := dlq.NewStore(b.Pool).Get(t.Context(), acmeID)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusQuarantined, d.Status, "nothing discarded")

	t.Run("Limited", func(t *testing.T) {
		client, who := b.SignIn(t, "acme:oncall")
		const posts = 30
		for range posts {
			resp := b.Do(t, client, http.MethodPost, "/deadletters/discard", form, crossSite)
			require.Equal(t, http.StatusForbidden, resp.Status)
		}
		var written int
		require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT count(DISTINCT request_id) FROM audit_log
            WHERE action = 'csrf.denied' AND actor_subject = $1`, who.Subject).Scan(&written))
		assert.Positive(t, written)
		assert.LessOrEqual(t, written, 11, "%d posts another site started: each counts once against the person's limit", posts)
		assert.Equal(t, 3*written, b.AuditCount(t, `action = 'csrf.denied' AND actor_subject = $1`, who.Subject),
			"every post written names all it selected")
	})
}

// TestGovern7OverLimitCrossSitePostCostsNoRoundTrip: once a person is over
// the limit of refusals another site started, a further cross-site post
// from their browser is refused without a round trip to PostgreSQL: not
// their session's read, not the object's lookup, no audit row.
func TestGovern7OverLimitCrossSitePostCostsNoRoundTrip(t *testing.T) {
	t.Parallel()
	b, st := tracedConsole(t)
	_, oncall := b.SignIn(t, "acme:oncall")
	dl := seed(t, b, "acme", "email.send", "g7-over-limit", map[string][]string{dlq.HeaderOperationID: {"g7-over-limit-op"}})
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{dl}, replay.SubmitInput{})
	client, who := b.SignIn(t, "acme:approver")
	approve := fmt.Sprintf("/replay/requests/%d/approve", req.ID)
	post := func(path string, form url.Values) {
		t.Helper()
		resp := b.Do(t, client, http.MethodPost, path, form, crossSite)
		require.Equal(t, http.StatusForbidden, resp.Status)
		require.Contains(t, resp.Body, "Cross-site request refused.")
	}

	for b.AuditCount(t, `action = 'csrf.denied' AND actor_subject = $1`, who.Subject) < 10 {
		post(approve, url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}})
	}
	post(approve, url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}}) // over the limit
	written := b.AuditCount(t, `action = 'csrf.denied' AND actor_subject = $1`, who.Subject)
	require.Equal(t, 10, written, "the burst is written, the post over it is not")

	st.Reset()
	post(approve, url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}})
	post("/deadletters/discard", url.Values{"id": {fmt.Sprint(dl)}, "reason": {"x"}})
	post("/audit/verify", nil)
	trips := st.Take()
	assert.Empty(t, trips, "round trips of cross-site posts over the limit:\n%s", strings.Join(trips, "\n"))
	assert.Equal(t, written, b.AuditCount(t, `action = 'csrf.denied' AND actor_subject = $1`, who.Subject), "none written")

	r, err := b.Replays.Request(t.Context(), req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status, "nothing approved")
}
