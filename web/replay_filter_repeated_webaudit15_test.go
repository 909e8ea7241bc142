package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixWebaudit15RepeatedParamsAreRefused: the replays page refuses a
// filter of its own given twice, as the groups page and the audit log do,
// naming it; a row's offer refuses its group given twice; a filter given
// once still lists.
func TestFixWebaudit15RepeatedParamsAreRefused(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	ok := b.Do(t, oncall, http.MethodGet, "/replay/requests?tenant=acme", nil, page)
	assert.Equal(t, http.StatusOK, ok.Status, ok.Body)
	resp := b.Do(t, oncall, http.MethodGet, "/replay/requests?tenant=&tenant=acme", nil, page)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status)
	assert.Contains(t, resp.Doc(t).Text(), `The filter "tenant" is given more than once`)

	offer := b.Do(t, oncall, http.MethodGet, "/groups/offer?group=0123456789abcdef&group=fedcba9876543210", nil, page)
	assert.Equal(t, http.StatusUnprocessableEntity, offer.Status, "the offer of a group given twice")
	groups := b.Do(t, oncall, http.MethodGet, "/groups?sort=count&sort=new", nil, page)
	assert.Equal(t, http.StatusUnprocessableEntity, groups.Status, "the page's own parameters too")
}
