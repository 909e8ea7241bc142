package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWebaudit15RepeatedFilterWidensBulkActionToEverything: the dead
// letter list, its count and its actions by filter read the first value
// of a repeated filter (tenant aside: several are a narrower scope). The
// list's filter form sends "type=" for any item type, so a type added to
// its URL by hand (?status=unresolved&type=&type=search.index_update)
// lists every unresolved dead letter, offers "Discard all matching…" on
// them, and the discard by filter offers to freeze the refunds with the
// one dead letter meant, as a misspelt filter did before revweb13 #1.
// The audit log refuses a filter given twice; so should these (422 naming
// it, nothing selected).
func TestRevWebaudit15RepeatedFilterWidensBulkActionToEverything(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	refunds := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed"},
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed"})
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", Error: "shard 4 unavailable"})
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}
	q := "?status=unresolved&type=&type=search.index_update"

	list := b.Do(t, oncall, http.MethodGet, "/deadletters"+q, nil, page)
	assert.Equal(t, http.StatusUnprocessableEntity, list.Status, "the list refuses a filter given twice")
	assert.Contains(t, list.Doc(t).Text(), `"type"`, "naming it")
	count := b.Do(t, oncall, http.MethodGet, "/deadletters/count"+q, nil, page)
	assert.GreaterOrEqual(t, count.Status, 400, "the count refuses it too")

	for _, path := range []string{"/deadletters/discard/filter", "/deadletters/resolve/filter", "/replay/filter"} {
		resp := b.Do(t, oncall, http.MethodPost, path+q, url.Values{"reason": {"index shard 4 incident"}}, page)
		if resp.Status == http.StatusSeeOther {
			resp = b.Do(t, oncall, http.MethodGet, resp.Header.Get("Location"), nil, page)
		}
		assert.GreaterOrEqual(t, resp.Status, 400, "POST %s%s: a filter given twice is refused", path, q)
		doc := resp.Doc(t)
		for _, id := range refunds {
			n := strconv.FormatInt(id, 10)
			assert.Zero(t, doc.Find(`input[name="id"][value="`+n+`"], a[href="/deadletters/`+n+`"]`).Length(),
				"POST %s%s offers to act on refund dead letter %d", path, q, id)
		}
	}
}
