package web_test

// Review (rev-govern6): failing tests for paths that reach an effect
// without passing the rule, or leave the record short of what happened.

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

// TestRevGovern6SelectionDenialReachesEveryTenantsAuditors: a denied
// attempt on another tenant's object is that tenant's to see (audit/query.go:
// "another tenant's denial is that tenant's"): a GET of globex's dead letter
// by an on-call of acme writes its authz.denied row under globex, and a
// bulk selection naming globex's dead letters alone does too
// (web/locate.go). But when one selection names dead letters of TWO
// tenants outside the caller's scope, the one row is written outside any
// tenant (the empty tenant), which only auditors of every tenant may read. So an
// insider who wants to try another tenant's dead letters without that
// tenant's auditors seeing it adds one id of a third tenant to the form:
// globex's auditor searches globex's log and finds nothing.
func TestRevGovern6SelectionDenialReachesEveryTenantsAuditors(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, me := b.SignIn(t, "acme:oncall")
	acme := seed(t, b, "acme", "search.index_update", "rg6-sel-acme", nil)
	globex := seed(t, b, "globex", "search.index_update", "rg6-sel-globex", nil)
	initech := seed(t, b, "initech", "search.index_update", "rg6-sel-initech", nil)

	form := url.Values{"id": {fmt.Sprint(acme), fmt.Sprint(globex), fmt.Sprint(initech)}, "reason": {"dup"}, "confirmed": {"1"}}
	resp := b.Do(t, client, http.MethodPost, "/deadletters/discard", form, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	// The attempt is recorded: one denied row per victim tenant, none naming
	// both (a row of one tenant naming the other's dead letter would tell
	// its auditors of another tenant's ids).
	require.Equal(t, 2, b.AuditCount(t, `action = 'authz.denied' AND outcome = 'denied' AND actor_subject = $1
        AND ($2 = ANY(string_to_array(object_id, ',')) OR $3 = ANY(string_to_array(object_id, ',')))`,
		me.Subject, fmt.Sprint(globex), fmt.Sprint(initech)))
	require.Zero(t, b.AuditCount(t, `action = 'authz.denied' AND outcome = 'denied' AND actor_subject = $1
        AND $2 = ANY(string_to_array(object_id, ',')) AND $3 = ANY(string_to_array(object_id, ','))`,
		me.Subject, fmt.Sprint(globex), fmt.Sprint(initech)))

	// What each victim tenant's auditor may read: rows of that tenant that
	// name its dead letter (audit.List keeps rows outside any tenant from
	// viewers of some tenants only).
	for tenant, id := range map[string]int64{"globex": globex, "initech": initech} {
		n := b.AuditCount(t, `action = 'authz.denied' AND outcome = 'denied' AND actor_subject = $1 AND tenant = $2
            AND $3 = ANY(string_to_array(object_id, ','))`, me.Subject, tenant, fmt.Sprint(id))
		assert.Equal(t, 1, n, "the attempt on %s's dead letter %d is in %s's audit log", tenant, id, tenant)
	}

	// Through the page an auditor of globex reads.
	auditor, _ := b.SignIn(t, "globex:auditor")
	page := b.Do(t, auditor, http.MethodGet, "/audit?"+url.Values{"actor": {me.Subject}, "action": {"authz.denied"}}.Encode(), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.Equal(t, 1, page.Doc(t).Find(`[data-testid="audit-row"]`).Length(),
		"globex's auditor sees that someone of acme tried globex's dead letters")
}

// TestRevGovern6TenantAuditExportIsInTheTenantsLog: an auditor of acme
// alone exports acme's audit log (GET /audit/export.jsonl: every entry of
// acme, its reasons, actors, addresses). The export is audited, but its row
// is written outside any tenant (web/audit_export.go names none), where
// only auditors of every tenant may read it: acme's other auditors, who
// answer for acme's log, never learn that it left the console, or who took
// it. A download of one acme dead letter's payload, by contrast, is an
// acme row.
func TestRevGovern6TenantAuditExportIsInTheTenantsLog(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	exporter, who := b.SignIn(t, "acme:auditor")
	resp := b.Do(t, exporter, http.MethodGet, "/audit/export.jsonl", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	require.Equal(t, 1, b.AuditCount(t, `action = 'audit.export' AND actor_subject = $1`, who.Subject), "the export is audited")

	assert.Equal(t, 1, b.AuditCount(t, `action = 'audit.export' AND actor_subject = $1 AND tenant = 'acme'`, who.Subject),
		"an export of acme's log alone is in acme's log")
	colleague, _ := b.SignIn(t, "acme:auditor")
	page := b.Do(t, colleague, http.MethodGet, "/audit?"+url.Values{"action": {"audit.export"}}.Encode(), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.Equal(t, 1, page.Doc(t).Find(`[data-testid="audit-row"]`).Length(), "acme's other auditor sees who exported acme's log")
}

// TestRevGovern6RouteDenialNamesWhatWasTried: a viewer of acme (no right
// to approve or download anywhere) posts an approval of acme's replay
// request and fetches an acme dead letter's payload. Both are refused
// (403) by the route table before the locator runs, and audited
// (web/middleware.go, deny with no tenant), but the rows name only the
// route pattern ("route POST /replay/requests/:id/approve"), not the
// request or dead letter tried, and are written outside any tenant. The
// acme auditor, who reviews acme's approvals, never sees that a viewer of
// acme tried to approve one, and an auditor of every tenant reads that
// someone tried to approve something, never which request. An attempt by
// the same viewer on globex's object, by contrast, is a globex row naming
// the object (notFoundDenied).
func TestRevGovern6RouteDenialNamesWhatWasTried(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	dl := seed(t, b, "acme", "email.send", "rg6-route-deny", map[string][]string{dlq.HeaderOperationID: {"rg6-route-op"}})
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{dl}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	viewer, who := b.SignIn(t, "acme:viewer")

	approve := b.Do(t, viewer, http.MethodPost, fmt.Sprintf("/replay/requests/%d/approve", req.ID), url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}}, nil)
	require.Equal(t, http.StatusForbidden, approve.Status)
	download := b.Do(t, viewer, http.MethodGet, fmt.Sprintf("/deadletters/%d/payload", dl), nil, nil)
	require.Equal(t, http.StatusForbidden, download.Status)
	require.Equal(t, 2, b.AuditCount(t, `action = 'authz.denied' AND outcome = 'denied' AND actor_subject = $1`, who.Subject), "both are audited")

	assert.Equal(t, 1, b.AuditCount(t, `action = 'authz.denied' AND outcome = 'denied' AND actor_subject = $1 AND tenant = 'acme'
        AND (object_type = 'replay_request' AND object_id = $2 OR reason ~ ('\m' || $2 || '\M'))`, who.Subject, fmt.Sprint(req.ID)),
		"the denied approval is an acme row naming request %d", req.ID)
	assert.Equal(t, 1, b.AuditCount(t, `action = 'authz.denied' AND outcome = 'denied' AND actor_subject = $1 AND tenant = 'acme'
        AND (object_type = 'dead_letter' AND object_id = $2 OR reason ~ ('\m' || $2 || '\M'))`, who.Subject, fmt.Sprint(dl)),
		"the denied download is an acme row naming dead letter %d", dl)
}
