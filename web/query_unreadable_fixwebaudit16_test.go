package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixWebaudit16UnreadableQueryIsRefusedEverywhere: a query
// url.ParseQuery would read only in part (a pair holding ";", a "%" not
// followed by two hex digits, more than 10,000 pairs) is refused with 422
// on every route, before any handler reads it: lists, counts, groups,
// exports, actions by filter, public routes, for people signed in or not,
// and before the refusal of a download another site started offers to
// start it again. The same filters, written so the parser reads them
// whole, work as before. A form body the parser cannot read whole was
// already refused whole (readForm's 400): nothing reads it in part.
func TestFixWebaudit16UnreadableQueryIsRefusedEverywhere(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	auditor, _ := b.SignIn(t, "acme:auditor", "globex:auditor")
	anonymous := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	acme := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed: upstream 503"})
	globex := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "orders.refund", Error: "refund failed: upstream 503"})
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}
	reason := url.Values{"reason": {"refund incident"}}

	type request struct {
		who    *http.Client
		method string
		path   string
		form   url.Values
		hdr    map[string]string
	}
	routes := []request{
		{oncall, http.MethodGet, "/deadletters", nil, page},
		{oncall, http.MethodGet, "/deadletters/count", nil, page},
		{oncall, http.MethodGet, "/groups", nil, page},
		{auditor, http.MethodGet, "/audit", nil, page},
		{auditor, http.MethodGet, "/audit/export.csv", nil, page},
		{auditor, http.MethodGet, "/audit/export.jsonl", nil, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{oncall, http.MethodPost, "/deadletters/discard/filter", reason, page},
		{oncall, http.MethodPost, "/replay/filter", reason, page},
		{anonymous, http.MethodGet, "/groups", nil, page},
		{anonymous, http.MethodGet, "/auth/login", nil, page},
	}
	unreadable := map[string]string{
		"Semicolon":    "?status=unresolved;tenant=acme",
		"BadEscape":    "?status=unresolved&tenant=acme%",
		"BadEscapeHex": "?tenant=acme&status=unresolved%zz",
		"TooMany":      "?tenant=acme" + strings.Repeat("&", 10_000),
	}
	for name, q := range unreadable {
		t.Run(name, func(t *testing.T) {
			for _, r := range routes {
				resp := b.Do(t, r.who, r.method, r.path+q, r.form, r.hdr)
				assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "%s %s%.40q", r.method, r.path, q)
				assert.Contains(t, resp.Body, "cannot be read whole", "%s %s%.40q says why", r.method, r.path, q)
				doc := resp.Doc(t)
				assert.Equal(t, "422", byID(doc, "error-page").AttrOr("data-status", ""), "%s %s%.40q: the error page", r.method, r.path, q)
				assert.NotContains(t, rowIDs(doc), strconv.FormatInt(globex, 10), "%s %s%.40q lists globex's dead letter", r.method, r.path, q)
			}
		})
	}

	t.Run("ReadWhole", func(t *testing.T) {
		list := b.Do(t, oncall, http.MethodGet, "/deadletters?status=unresolved&tenant=acme&q=upstream%3B&&", nil, page)
		require.Equal(t, http.StatusOK, list.Status, "a ';' written as %%3B, and empty pairs, are read whole")
		list = b.Do(t, oncall, http.MethodGet, "/deadletters?status=unresolved&tenant=acme", nil, page)
		require.Equal(t, http.StatusOK, list.Status)
		assert.Equal(t, []string{strconv.FormatInt(acme, 10)}, rowIDs(list.Doc(t)), "the tenant asked for, alone")
		for _, path := range []string{"/groups?state=unresolved&tenant=acme", "/deadletters/count?tenant=acme", "/audit/export.csv?tenant=acme"} {
			who := oncall
			if strings.HasPrefix(path, "/audit") {
				who = auditor
			}
			assert.Equal(t, http.StatusOK, b.Do(t, who, http.MethodGet, path, nil, page).Status, path)
		}
		discard := b.Do(t, oncall, http.MethodPost, "/deadletters/discard/filter?status=unresolved&tenant=acme", reason, page)
		assert.Less(t, discard.Status, 400, "an action by filter read whole goes on")
	})

	t.Run("FormBody", func(t *testing.T) {
		// A browser encodes ";" and "%" in a form; a body that holds them
		// raw is refused whole, as it was, not read in part.
		for _, body := range []string{"reason=x;tenant=globex", "reason=x&tenant=acme%", "reason=x" + strings.Repeat("&", 10_000)} {
			resp := b.DoForm(t, oncall, http.MethodPost, "/deadletters/discard/filter?status=unresolved&tenant=acme", body, page)
			assert.Equal(t, http.StatusBadRequest, resp.Status, "%.40q", body)
			assert.Contains(t, resp.Body, "The form could not be read.", "%.40q", body)
		}
	})
}
