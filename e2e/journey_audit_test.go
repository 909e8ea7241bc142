package e2e

import (
	"context"
	"encoding/csv"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// auditExportColumns is the CSV header of /audit/export.csv.
var auditExportColumns = []string{
	"seq", "at", "actor_issuer", "actor_subject", "actor_email", "actor_email_verified", "tenant", "action",
	"object_type", "object_id", "message_id", "operation_id", "request_id", "reason", "outcome",
	"before", "after", "remote_addr", "user_agent", "prev_hash", "hash", "nonce",
}

// TestAuditJourney is journey 4 of issue 6 without its replay parts. Other
// people sign in first; the auditor signs in through Dex in Chromium, finds
// their sign-ins in the audit log, filters by actor and action, opens one
// event, exports the filtered log as CSV with the browser's session (header
// row, the event, the chain-head trailer that matches the database), has no
// admin link, and is refused when trying to grant themselves admin, both
// from the page (403 from authorization) and cross-site (403 from the
// cross-origin protection); both refusals are in the audit log, no binding
// was added, and `console audit verify` passes with the current head.
func TestAuditJourney(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{})
	b := newBrowser(t)

	for _, email := range []string{userOncall, userApprover} {
		other := b.newSession(t, s.Console.URL, strings.Split(email, "@")[0])
		other.LoginAs(email)
	}

	auditor := b.newSession(t, s.Console.URL, "auditor")
	auditor.LoginAs(userAuditor)
	assert.Equal(t, "Ada Auditor", auditor.Text(testID("user-name")))
	assert.Contains(t, auditor.Text(testID("user-roles")), "all tenants: auditor")
	assert.True(t, auditor.Exists(testID("nav-audit")), "the auditor has the audit link")
	assert.False(t, auditor.Exists(testID("nav-admin")), "the auditor has no admin link")

	// The log shows the other people's sign-ins.
	auditor.ClickLoads(testID("nav-audit"), "the audit table", `document.querySelector('[data-testid="audit-table"]')`)
	rows := auditRows(auditor)
	for _, email := range []string{userOncall, userApprover} {
		assert.Truef(t, hasRow(rows, email, "auth.login", "ok"), "a sign-in of %s in %+v", email, rows)
	}

	// Filter by actor and action, as a person does: type, choose, apply.
	auditor.Fill(`input[name="actor"]`, userOncall)
	auditor.Select(`select[name="action"]`, "auth.login")
	auditor.Click(testID("audit-filter") + ` button[type="submit"]`)
	auditor.WaitUntil("the filtered results", `(() => {
		const q = new URLSearchParams(location.search);
		const rows = [...document.querySelectorAll('[data-testid="audit-row"]')];
		return q.get("actor") === `+jsString(userOncall)+` && q.get("action") === "auth.login" && rows.length > 0 &&
			rows.every(r => r.querySelector('td[data-label="Actor"]').textContent.trim() === `+jsString(userOncall)+`);
	})()`)
	rows = auditRows(auditor)
	require.Len(t, rows, 1, "the on-call signed in once: %+v", rows)
	require.Equal(t, "auth.login", rows[0].Action)
	assert.Equal(t, "1 event", auditor.Text(testID("audit-count")))
	filtered := auditor.Location()

	// One event in full.
	auditor.ClickLoads(testID("audit-row-link"), "the audit event page", `/\/audit\/\d+$/.test(location.pathname) && document.querySelector('[data-testid="audit-event-chain"]')`)
	assert.Equal(t, "auth.login", auditor.Text(testID("audit-event-action")))
	assert.Contains(t, auditor.Text(testID("audit-event-actor")), userOncall)
	eventSeq := strings.TrimPrefix(mustParseURL(t, auditor.Location()).Path, "/audit/")
	assert.Equal(t, rows[0].Seq, eventSeq)
	eventHash := regexp.MustCompile(`[0-9a-f]{64}`).FindAllString(auditor.Text(testID("audit-event-chain")), -1)
	require.NotEmpty(t, eventHash, "the event page shows its hash")

	// Export the filtered log as CSV with the browser's own session.
	auditor.Open(filtered)
	href := auditor.Attr(testID("export-csv"), "href")
	require.Contains(t, href, "actor=", "the export link carries the filter")
	res := auditor.Fetch(http.MethodGet, href, nil)
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Contains(t, res.ContentType, "text/csv")
	records, err := csv.NewReader(strings.NewReader(res.Body)).ReadAll() // every record as long as the header, the trailer too
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(records), 3, "header, one event, trailer:\n%s", res.Body)
	assert.Equal(t, auditExportColumns, records[0], "CSV header row")
	data, trailer := records[1:len(records)-1], records[len(records)-1]
	// Entries the filter leaves out, up to the signed checkpoint the file
	// ends at, are stubs: seq and hashes, no action, no content.
	data = slices.DeleteFunc(data, func(rec []string) bool { return rec[indexOf(auditExportColumns, "action")] == "" })
	require.Len(t, data, 1, "the export holds the filtered event only (and stubs):\n%s", res.Body)
	col := func(rec []string, name string) string { return rec[indexOf(auditExportColumns, name)] }
	assert.Equal(t, eventSeq, col(data[0], "seq"))
	assert.Equal(t, userOncall, col(data[0], "actor_email"))
	assert.Equal(t, "true", col(data[0], "actor_email_verified"), "Dex verifies its users' emails")
	assert.Equal(t, "auth.login", col(data[0], "action"))
	assert.Equal(t, eventHash[len(eventHash)-1], col(data[0], "hash"), "the hash the event page shows")
	// # chain-head,<seq>,<hash>,<signed at>,<reason>,<key id>,<public key>,<signature>,<filter>, then empty cells.
	// The file ends at the first checkpoint the console signed after the
	// filtered event: one signed for the export, or an earlier one.
	assert.Equal(t, make([]string, len(auditExportColumns)-9), trailer[9:], "the trailer pads to the header's length")
	assert.Equal(t, "# chain-head", trailer[0])
	assert.NotEmpty(t, trailer[4], "a signed checkpoint's reason")
	assert.Equal(t, s.AuditKeyID, trailer[5], "by the console's key")
	assert.Contains(t, trailer[8], "actor", "the trailer records the filter")
	headSeq, err := strconv.ParseInt(trailer[1], 10, 64)
	require.NoError(t, err)
	var dbHash []byte
	require.NoError(t, s.DB.QueryRow(context.Background(), `SELECT hash FROM audit_log WHERE seq = $1`, headSeq).Scan(&dbHash))
	assert.Equal(t, hex.EncodeToString(dbHash), trailer[2], "the trailer is the chain head in the database")

	// The auditor tries to make themselves admin: from the page (same
	// origin, so authorization decides) and from another site.
	grant := url.Values{"email": {userAuditor}, "role": {"admin"}, "tenant": {"*"}}
	res = auditor.Fetch(http.MethodPost, "/admin/bindings", grant)
	assert.Equal(t, http.StatusForbidden, res.Status, "POST /admin/bindings from the auditor's page: %s", res.Body)
	status, body := httpWithCookies(t, http.MethodPost, s.Console.URL+"/admin/bindings", auditor.Cookies(), http.Header{
		"Origin":         {"http://evil.example"},
		"Sec-Fetch-Site": {"cross-site"},
		"Content-Type":   {"application/x-www-form-urlencoded"},
	}, grant.Encode())
	assert.Equal(t, http.StatusForbidden, status, "cross-site POST with the auditor's session: %s", body)
	var bindings int
	require.NoError(t, s.DB.QueryRow(context.Background(),
		`SELECT count(*) FROM role_bindings WHERE subject = 'email:' || $1`, userAuditor).Scan(&bindings))
	assert.Zero(t, bindings, "no binding was added for the auditor")

	// Both refusals are in the log, under the auditor's name.
	auditor.Open("/audit?" + url.Values{"actor": {userAuditor}, "outcome": {"denied"}}.Encode())
	auditor.WaitUntil("the auditor's denials", `document.querySelectorAll('[data-testid="audit-row"]').length >= 2`)
	rows = auditRows(auditor)
	assert.Truef(t, hasRow(rows, userAuditor, "authz.denied", "denied"), "authz.denied row in %+v", rows)
	assert.Truef(t, hasRow(rows, userAuditor, "csrf.denied", "denied"), "csrf.denied row in %+v", rows)
	auditor.Screenshot("")

	seq, hash := s.Console.AuditVerify(t)
	var maxSeq int64
	var maxHash []byte
	require.NoError(t, s.DB.QueryRow(context.Background(), `SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1`).Scan(&maxSeq, &maxHash))
	assert.Equal(t, maxSeq, seq, "verify's head seq")
	assert.Equal(t, hex.EncodeToString(maxHash), hash, "verify's head hash")
	assert.GreaterOrEqual(t, seq, headSeq)
}

// auditRow is one row of the audit table as the page shows it.
type auditRow struct {
	Seq     string `json:"seq"`
	Actor   string `json:"actor"`
	Action  string `json:"action"`
	Outcome string `json:"outcome"`
}

func auditRows(s *session) []auditRow {
	s.t.Helper()
	return eval[[]auditRow](s, "read the audit table", `[...document.querySelectorAll('[data-testid="audit-row"]')].map(r => {
		const cell = l => (r.querySelector('td[data-label="' + l + '"]') || {textContent: ""}).textContent.trim();
		return {seq: r.dataset.seq, actor: cell("Actor"), action: cell("Action"), outcome: cell("Outcome")};
	})`)
}

func hasRow(rows []auditRow, actor, action, outcome string) bool {
	for _, r := range rows {
		if r.Actor == actor && r.Action == action && r.Outcome == outcome {
			return true
		}
	}
	return false
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	panic("no column " + x)
}

func mustParseURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}
