package web_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWebaudit16UnreadableQueryActsOnEveryTenant: every page reads its
// filters with url.ParseQuery (echo's QueryParams), which drops what it
// cannot read and says so only in an error nobody looks at: a pair
// holding a ";", a pair with a "%" not followed by two hex digits, and
// every pair of a query of more than 10,000. The filter the address asked
// for is then no filter at all: /groups?state=unresolved;tenant=acme
// lists the groups of every tenant of the person, and each row's
// Discard… takes globex's dead letters too; a link cut after
// "tenant=acme%" lists globex's dead letters. A query the parser would
// drop parts of should be refused (422), on every route, before any
// handler reads it.
func TestRevWebaudit16UnreadableQueryActsOnEveryTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed: upstream 503",
		Class: "transient"})
	globex := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "orders.refund",
		Error: "refund failed: upstream 503", Class: "transient"})
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	groups := b.Do(t, oncall, http.MethodGet, "/groups?state=unresolved;tenant=acme", nil, page)
	discard, _ := byID(groups.Doc(t), "group-discard").Parent().Attr("action")
	assert.NotContains(t, discard, "globex", `";" drops the tenant: Discard… offers globex's dead letters`)
	assert.Equal(t, http.StatusUnprocessableEntity, groups.Status, `a query holding ";" is refused`)

	for _, q := range []string{"?status=unresolved&tenant=acme%", "?tenant=acme" + strings.Repeat("&", 10_000)} {
		list := b.Do(t, oncall, http.MethodGet, "/deadletters"+q, nil, page)
		assert.NotContains(t, rowIDs(list.Doc(t)), strconv.FormatInt(globex, 10), "%.40q drops the tenant: globex's dead letter is listed", q)
		assert.Equal(t, http.StatusUnprocessableEntity, list.Status, "%.40q is refused", q)
	}
}
