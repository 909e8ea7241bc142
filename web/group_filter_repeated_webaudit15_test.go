package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWebaudit15GroupsPageRepeatedTenantActsOnEveryTenant: the groups
// page reads the first of a repeated parameter. The filter form sends
// "tenant=" for "Any tenant"; a tenant appended to that URL by hand
// (/groups?tenant=&...&tenant=acme) lists, unfiltered, the groups of
// every tenant of the person, and each row's Discard…, Mark resolved… and
// Replay… take the group's dead letters in globex too, though the URL
// asks for acme. The audit log refuses a filter given twice, and the dead
// letter list reads several tenants as a narrower scope; the groups page
// (and its row's offer) should refuse it (422 naming it), as it refuses
// a misspelt one.
func TestRevWebaudit15GroupsPageRepeatedTenantActsOnEveryTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	for _, tenant := range []string{"acme", "globex"} {
		testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "orders.refund", Error: "refund failed: upstream 503",
			Class: "transient"})
	}
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	resp := b.Do(t, oncall, http.MethodGet, "/groups?tenant=&state=unresolved&tenant=acme", nil, page)
	d := resp.Doc(t)
	discard, _ := byID(d, "group-discard").Parent().Attr("action")
	assert.NotContains(t, discard, "globex", "a tenant given twice offers a Discard… of globex's dead letters too")
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "a filter given twice is refused, as the audit log refuses it")
	assert.Contains(t, d.Text(), `"tenant"`, "the refusal names it")

	offer := b.Do(t, oncall, http.MethodGet, "/groups/offer?tenant=&tenant=acme&group=0123456789abcdef", nil, page)
	assert.Equal(t, http.StatusUnprocessableEntity, offer.Status, "the offer fragment refuses it too")
}
