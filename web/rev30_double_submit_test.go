package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevUx30SecondSubmitTakesToTheRequest: "Request replay" pressed twice
// (the first answer never shown), or the form sent again from a back
// button: the second POST of the submitted selection answered 409 with the
// confirm page, which said the request "publishes as soon as you submit"
// and offered the button again. It now takes the person, as the first
// did, to the request the selection became, saying nothing was requested
// again; one request exists, one submit is audited.
func TestRevUx30SecondSubmitTakesToTheRequest(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, u := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "orders.refund", "doc-twice", nil)
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(id)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	page := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	name, _ := page.Find(`input[name^="confirm-"]`).First().Attr("name")
	require.NotEmpty(t, name, "a manual request asks its phrase typed")
	draft, err := strconv.ParseInt(strings.TrimPrefix(name, "confirm-"), 10, 64)
	require.NoError(t, err)
	phrase, err := b.Replays.ConfirmationFor(t.Context(), draft)
	require.NoError(t, err)
	form := url.Values{"reason": {"refund the order again"}, name: {phrase}}

	first := b.Do(t, oncall, "POST", confirm, form, nil)
	require.Equal(t, http.StatusSeeOther, first.Status, first.Body)
	reqPath := first.Header.Get("Location")
	require.True(t, strings.HasPrefix(reqPath, "/replay/requests/"), reqPath)

	second := b.Do(t, oncall, "POST", confirm, form, nil)
	assert.Equal(t, http.StatusSeeOther, second.Status, "%.400s", second.Body)
	assert.Equal(t, reqPath, second.Header.Get("Location"), "to the request the first press made")
	shown := b.Do(t, oncall, "GET", reqPath, nil, nil)
	require.Equal(t, http.StatusOK, shown.Status)
	assert.Contains(t, shown.Body, "nothing was requested again")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'replay.request' AND outcome = 'ok' AND actor_subject = $1", u.Subject), "requested once")
	var n int
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT count(*) FROM replay_requests WHERE tenant = 'acme' AND status <> 'draft'`).Scan(&n))
	assert.Equal(t, 1, n, "one request")
}
