package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev44ListReasonStaysOutOfTheAddress: the reason typed on the dead
// letter list's Replay… went to the confirm page in its address
// (/replay/batches/<b>?reason=…), so it reached the browser's history, a
// proxy's log and the access log; a reason may name a customer or an
// incident (review round 44, after the payload edit's own). It is kept in
// the session with the page's form, and the page shows it as before.
func TestRev44ListReasonStaysOutOfTheAddress(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "doc-private", nil)
	list := "/deadletters?type=search.index_update"
	resp := b.Do(t, oncall, http.MethodPost, "/replay", url.Values{"id": {fmt.Sprint(id)}, "reason": {"customer ACME-4471 asked"}, "return_to": {list}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	assert.NotContains(t, confirm, "reason")
	assert.NotContains(t, confirm, "4471")
	d := b.Do(t, oncall, http.MethodGet, confirm, nil, nil).Doc(t)
	assert.Equal(t, "customer ACME-4471 asked", strings.TrimSpace(d.Find(`[data-testid="replay-reason"]`).Text()), "the reason comes along")
	assert.Equal(t, list, d.Find(`[data-testid="replay-back"]`).First().AttrOr("href", ""), "and the list to go back to")
}
