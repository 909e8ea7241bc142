package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevRetention27TimeZoneSavedReturnsOnlyToThisSite: the time zone
// form, saved without htmx, sends the person back to the page it names,
// and only to a page of this console: a return_to of another site (a link
// someone else made, posting the form) sends them to the console's home,
// never off the site, whichever zone is saved.
func TestRevRetention27TimeZoneSavedReturnsOnlyToThisSite(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	resp := b.Do(t, c, http.MethodPost, "/settings/time", url.Values{"time_zone": {"utc"}, "return_to": {"/deadletters?tenant=acme"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.Equal(t, "/deadletters?tenant=acme", resp.Header.Get("Location"), "precondition: a page of the site is returned to")
	for _, tz := range []string{"utc", "local"} {
		for _, to := range []string{"https://evil.example/deadletters", "//evil.example/x", "/\\evil.example/x"} {
			resp := b.Do(t, c, http.MethodPost, "/settings/time", url.Values{"time_zone": {tz}, "return_to": {to}}, nil)
			require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
			loc := resp.Header.Get("Location")
			u, err := url.Parse(loc)
			require.NoError(t, err)
			assert.True(t, u.Host == "" && u.Scheme == "" && len(loc) > 0 && loc[0] == '/' && (len(loc) == 1 || (loc[1] != '/' && loc[1] != '\\')),
				"saving %s with return_to %q goes to %q: a page of this console", tz, to, loc)
		}
	}
}
