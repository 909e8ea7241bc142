package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb12UnstorableFilterTextIsA500: text a person types (or a link
// carries) goes to PostgreSQL as is from most filters and some forms. A
// NUL byte or a byte sequence that is not UTF-8 (%00, %FF in a link) is
// refused by PostgreSQL (SQLSTATE 22021, "invalid byte sequence for
// encoding UTF8"), and the console answers 500 "Something went wrong"
// and logs an ERROR, instead of the form's 422 with a message at the
// field. The group triage forms and fixes already refuse such text
// (dlq.StorableText, dlq.UnstorableTextMessage); the filters of the dead
// letter list and its count fragment, the groups page, the audit log and
// its export, the draft batch path, and the admin forms (role binding's
// tenant, Sign out everywhere's issuer/subject) do not.
//
// Severity: low. Anyone can send an on-call a link that shows the error
// page and writes an ERROR with the request into the log (5xx noise an
// operator then has to explain); a person pasting a value with a stray
// control byte gets "Something went wrong" with nothing to fix.
// Expected: a 4xx (the form's 422 naming the field), never a 5xx.
func TestRevWeb12UnstorableFilterTextIsA500(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	testfactory.DeadLetters(t, b.Pool, testfactory.Letter{})
	client, _ := b.SignIn(t, "*:admin", "*:oncall", "*:auditor")
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	for _, path := range []string{
		"/deadletters?subject=%00",       // dlq list filter (subject, msg_id, op_id, corr_id, type)
		"/deadletters?msg_id=%FF",        //
		"/deadletters?type=%FF",          //
		"/deadletters/count?corr_id=%00", // the count fragment
		"/groups?type=%00",               // groups page
		"/audit?actor=%FF",               // audit filter (actor, action, tenant, object)
		"/audit?object=%00",              //
		"/audit/export.csv?tenant=%00",   // the export of the same filter
		"/replay/batches/%FF",            // a batch id in the path
	} {
		r := b.Do(t, client, http.MethodGet, path, nil, page)
		assert.Less(t, r.Status, 500, "GET %s: bad bytes in what the person typed are a 4xx with a message, not a 500", path)
	}
	for _, p := range []struct {
		path string
		form url.Values
	}{
		{"/admin/bindings", url.Values{"tenant": {"acme\x00"}, "role": {"oncall"}, "email": {"kate@example.com"}}},
		{"/admin/sessions/revoke", url.Values{"issuer": {"https://idp\xff"}, "subject": {"kate"}}},
		{"/deadletters/discard/filter?q=a%00b", url.Values{"reason": {"cleanup"}}},
	} {
		r := b.Do(t, client, http.MethodPost, p.path, p.form, page)
		assert.Less(t, r.Status, 500, "POST %s: bad bytes in a form are a 4xx with a message, not a 500", p.path)
	}
}
