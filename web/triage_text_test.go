package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestTriageFormsRefuseUnstorableText posts what a browser never sends but
// a client can: a NUL byte and bytes that are not UTF-8, in every free-text
// field of the group triage forms and of a fix marker. PostgreSQL stores
// neither in a text column, so each must come back as the form again with
// a message at the field (422), nothing recorded and nothing audited as
// done; never a 500 from a statement that failed.
func TestTriageFormsRefuseUnstorableText(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "orders.refund", "unstorable-1", nil)
	var group string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT fingerprint FROM dead_letters WHERE id = $1`, id).Scan(&group))

	for _, bad := range []struct{ name, text string }{{"NUL", "team\x00a"}, {"NotUTF8", "team \xff\xfe"}} {
		t.Run(bad.name, func(t *testing.T) {
			for _, tc := range []struct {
				path, field string
				form        url.Values
				testid      string
			}{
				{views.PathGroupOwner, "owner", url.Values{"owner": {bad.text}}, "field-error-owner"},
				{views.PathGroupNote, "note", url.Values{"note": {bad.text}}, "field-error-note"},
				{"/deadletters/" + strconv.FormatInt(id, 10) + "/fix", "ref", url.Values{"scope": {"item_type"},
					"fixed_at": {time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")}, "ref": {bad.text}}, "fix-error-ref"},
				{"/deadletters/" + strconv.FormatInt(id, 10) + "/fix", "note", url.Values{"scope": {"item_type"},
					"fixed_at": {time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04")}, "ref": {"v1.2.3"}, "note": {bad.text}}, "fix-error-note"},
			} {
				tc.form.Set("tenant", "acme")
				tc.form.Set("group", group)
				resp := b.Do(t, oncall, "POST", tc.path, tc.form, nil)
				require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "%s %s", tc.path, tc.field)
				d := resp.Doc(t)
				assert.NotEmpty(t, text(d.Find(`[data-testid="`+tc.testid+`"]`)), "%s: a message at %s", tc.path, tc.field)
			}
		})
	}
	var triaged, fixes int
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM group_triage), (SELECT count(*) FROM fix_markers)`).Scan(&triaged, &fixes))
	assert.Zero(t, triaged, "nothing recorded about the group")
	assert.Zero(t, fixes, "no fix recorded")
	assert.Zero(t, b.AuditCount(t, `action IN ('group.assign', 'group.note', 'deadletter.fix')`), "nothing audited as done")
}

// TestCloseRefusesAReasonTheLogWouldCut discards and resolves with a reason
// longer than the audit log keeps: the confirmation comes back with a
// message at the reason (422) and the selection kept, nothing is closed;
// a reason of exactly the bound goes through whole.
func TestCloseRefusesAReasonTheLogWouldCut(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	one := seed(t, b, "acme", "orders.refund", "long-reason-1", nil)
	two := seed(t, b, "acme", "orders.refund", "long-reason-2", nil)
	long := strings.Repeat("é", dlq.MaxCloseReason/2) + "x"
	for _, tc := range []struct{ path string }{
		{"/deadletters/" + strconv.FormatInt(one, 10) + "/discard"},
		{"/deadletters/resolve"},
	} {
		form := url.Values{"reason": {long}, "confirmed": {"1"}, "id": {strconv.FormatInt(one, 10), strconv.FormatInt(two, 10)}}
		resp := b.Do(t, oncall, "POST", tc.path, form, nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, tc.path)
		assert.NotEmpty(t, text(resp.Doc(t).Find(`[data-testid="field-error-reason"]`)), tc.path)
	}
	var open int
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters WHERE id IN ($1, $2) AND status = 'quarantined'`,
		one, two).Scan(&open))
	assert.Equal(t, 2, open, "nothing closed")

	exact := strings.Repeat("é", dlq.MaxCloseReason/2)
	resp := b.Do(t, oncall, "POST", "/deadletters/discard", url.Values{"reason": {exact}, "confirmed": {"1"},
		"id": {strconv.FormatInt(one, 10), strconv.FormatInt(two, 10)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status)
	assert.Equal(t, 2, b.AuditCount(t, `action = 'deadletter.discard' AND outcome = 'ok' AND reason = $1`, exact), "kept whole")
}
