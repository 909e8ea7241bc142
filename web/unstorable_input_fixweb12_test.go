package web_test

import (
	"context"
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
	"github.com/quarantine-console/quarantine/web"
)

// unstorable is text PostgreSQL refuses: a byte that is not UTF-8 and a
// NUL, as a link carries them (%FF, %00).
const unstorable = "a\xffb\x00c"

// formFields are the names of every parameter a handler of the console
// reads from a query or a form.
var formFields = []string{
	"action", "actor", "after", "anchor", "back", "before", "choice", "class", "confirm", "confirmation", "confirmed",
	"corr_id", "count", "email", "fixed_at", "for", "from", "group", "grows", "id", "intent", "issuer", "message_id",
	"mine", "msg_id", "note", "object", "op_id", "order", "outcome", "owner", "page", "payload", "q", "reason", "ref",
	"reconciliation_note", "replay_reason", "requester", "requester_issuer", "requester_subject", "return_to", "role",
	"scope", "seen", "sort", "span", "stale", "state", "status", "subject", "tenant", "ticket", "time_zone", "to",
	"type", "undo", "v", "version",
}

// routeObjects makes an object for each path parameter of the route table
// and returns a client of a person who may do everything, what fills a
// route's path with them (a dead letter with a payload and a stack trace,
// a replay request of another, a draft of a third, a role binding, an
// audit entry), and the draft's requests.
func routeObjects(t *testing.T, b *testfactory.Console) (*http.Client, func(string) string, []replay.Request) {
	t.Helper()
	ctx := context.Background()
	all, u := b.SignIn(t, "*:admin", "*:auditor", "*:oncall", "*:approver")
	ids := testfactory.DeadLetters(t, b.Pool, testfactory.Letter{Tenant: "acme"},
		testfactory.Letter{Tenant: "acme", Stack: "at Handler.java:42", Payload: []byte(`{"order":1}`)},
		testfactory.Letter{Tenant: "acme"})
	req := testfactory.Request(t, b.Replays, u.Actor, []int64{ids[0]}, replay.SubmitInput{})
	batch, drafts := testfactory.Draft(t, b.Replays, u.Actor, ids[2])
	resp := b.Do(t, all, "POST", "/admin/bindings", url.Values{"email": {"pat@example.com"}, "role": {"viewer"}, "tenant": {"acme"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	var binding, seq int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM role_bindings WHERE subject = 'email:pat@example.com'`).Scan(&binding))
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT max(seq) FROM audit_log`).Scan(&seq))
	fill := func(path string) string {
		path = strings.Replace(path, ":batch", batch, 1)
		path = strings.Replace(path, ":seq", strconv.FormatInt(seq, 10), 1)
		path = strings.Replace(path, ":dl", strconv.FormatInt(ids[0], 10), 1)
		path = strings.Replace(path, "/*", "/app.js", 1)
		switch {
		case strings.HasPrefix(path, "/replay/requests/:id"):
			path = strings.Replace(path, ":id", strconv.FormatInt(req.ID, 10), 1)
		case strings.HasPrefix(path, "/admin/bindings/:id"):
			path = strings.Replace(path, ":id", strconv.FormatInt(binding, 10), 1)
		}
		return strings.Replace(path, ":id", strconv.FormatInt(ids[1], 10), 1)
	}
	return all, fill, drafts
}

// TestFixWeb12EveryRouteAnswersUnstorableTextBelow500 walks the route
// table: each parameter any handler reads, sent to every route with text
// PostgreSQL cannot store (in the query, and for a POST in its form too,
// beside ordinary values of the other fields), is answered below 500,
// and refused by the form before PostgreSQL sees it.
func TestFixWeb12EveryRouteAnswersUnstorableTextBelow500(t *testing.T) {
	t.Parallel()
	var log consoleLog
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Log: &log})
	all, fill, drafts := routeObjects(t, b)
	anon := testfactory.NoFollow(nil)
	fields := append([]string{}, formFields...)
	for _, d := range drafts {
		fields = append(fields, "rate-"+strconv.FormatInt(d.ID, 10), "confirm-"+strconv.FormatInt(d.ID, 10))
	}
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}
	checked := 0
	for _, r := range (&web.Server{}).Routes() {
		if r.Method == http.MethodHead || r.Path == "/auth/logout" || r.Path == "/auth/login" {
			continue // the sign-out would end the session the walk goes on with; the sign-in goes to the identity provider
		}
		client := all
		if r.Access == web.AccessPublic {
			client = anon
		}
		path := fill(r.Path)
		for _, field := range fields {
			q := url.Values{field: {unstorable}}
			var form url.Values
			if r.Method == http.MethodPost {
				// Ordinary values of the fields most forms need, so that the
				// one probed is what is wrong.
				form = url.Values{"reason": {"probe"}, "note": {"probe"}, "id": {fill("/deadletters/:id")[len("/deadletters/"):]},
					"email": {"probe@example.com"}, "role": {"viewer"}, "tenant": {"acme"}, "issuer": {"https://idp.example"},
					"subject": {"probe"}}
				form.Set(field, unstorable)
			}
			resp := b.Do(t, client, r.Method, path+"?"+q.Encode(), form, page)
			if !assert.Less(t, resp.Status, 500, "%s %s with %s not storable text", r.Method, r.Path, field) {
				continue
			}
			if resp.Status == http.StatusUnprocessableEntity {
				assert.NotContains(t, resp.Body, "Something went wrong", "%s %s %s", r.Method, r.Path, field)
			}
			checked++
		}
	}
	assert.Greater(t, checked, 40*len(formFields), "every route, every field")
	assert.NotContains(t, log.String(), "PostgreSQL refused", "each filter and form refused the text itself (formText), not PostgreSQL")
}

// TestFixWeb12UnstorableTextIsSaidAtItsField: a filter or a form with text
// PostgreSQL cannot store is re-rendered (422) with dlq.UnstorableTextMessage
// at the field, the text shown with replacement characters for the person
// to correct; the rest of the page is the form as usual.
func TestFixWeb12UnstorableTextIsSaidAtItsField(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, _ := b.SignIn(t, "*:admin", "*:oncall", "*:auditor")
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}
	for _, c := range []struct{ path, field string }{
		{"/deadletters?subject=app%00", "subject"},
		{"/deadletters?q=timeout%FF", "q"},
		{"/deadletters?tenant=acme%00", "tenant"},
		{"/groups?type=%00", "type"},
		{"/audit?actor=kate%FF", "actor"},
		{"/audit?object=%00", "object"},
		{"/replay/requests?requester=kate%FF", "requester"},
	} {
		r := b.Do(t, client, http.MethodGet, c.path, nil, page)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "GET %s", c.path)
		doc := r.Doc(t)
		assert.Contains(t, doc.Find(`[name="`+c.field+`"]`).Closest(".field").Text(), dlq.UnstorableTextMessage, "GET %s", c.path)
	}

	r := b.Do(t, client, http.MethodPost, "/admin/bindings",
		url.Values{"tenant": {"acme\x00"}, "role": {"viewer"}, "email": {"kate@example.com"}}, page)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	assert.Contains(t, r.Doc(t).Find(`[name="tenant"]`).Closest(".field").Text(), dlq.UnstorableTextMessage)
	assert.Zero(t, b.AuditCount(t, "action LIKE 'binding.%' AND outcome = 'ok'"), "nothing was bound")

	r = b.Do(t, client, http.MethodPost, "/admin/sessions/revoke", url.Values{"issuer": {"https://idp\xff"}, "subject": {"kate"}}, page)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	assert.Contains(t, r.Body, "Choose a person from the list.")

	r = b.Do(t, client, http.MethodGet, "/replay/batches/%FF", nil, page)
	assert.Equal(t, http.StatusNotFound, r.Status, "a batch id that is not text is no batch")
}
