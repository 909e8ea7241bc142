package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixUxLivePollLeavesTheFlash: a message an action leaves for the
// next page (here the time zone saved, after its 303) was taken by
// whatever page rendered next, the dashboard's refresh on its timer too
// (authz.PollHeader): a refresh that landed before the person's next page
// load took it, and its swap of a part of the page did not show it. A
// refresh now takes no flash; the next page the person loads shows it.
func TestFixUxLivePollLeavesTheFlash(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")

	resp := b.Do(t, oncall, "POST", "/settings/time", url.Values{"time_zone": {"utc"}, "return_to": {"/"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	poll := b.Do(t, oncall, "GET", "/", nil, map[string]string{"HX-Request": "true", authz.PollHeader: "1"})
	require.Equal(t, http.StatusOK, poll.Status, poll.Body)
	require.Equal(t, 1, byID(poll.Doc(t), "dashboard").Length(), "the refresh is answered")
	assert.Zero(t, byID(poll.Doc(t), "flash").Length(), "a refresh shows no flash: %s", textOf(poll.Doc(t), `[data-testid="flash"]`))

	page := b.Do(t, oncall, "GET", "/", nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Equal(t, "Times are shown in UTC.", textOf(page.Doc(t), `[data-testid="flash"]`), "the next page a person loads shows it")
	again := b.Do(t, oncall, "GET", "/", nil, nil)
	assert.Zero(t, byID(again.Doc(t), "flash").Length(), "once")
}
