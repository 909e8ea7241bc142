package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// timeZoneReturn is where the time zone form of the page resp rendered
// sends its person back to.
func timeZoneReturn(t *testing.T, resp testfactory.Response) string {
	t.Helper()
	back, ok := resp.Doc(t).Find(`[data-testid="time-zone-form"] input[name="return_to"]`).Attr("value")
	require.True(t, ok, "the page has the time zone form: %d %s", resp.Status, resp.Body)
	return back
}

// TestTimeZoneFormReturnsToAPageOfThisSite: on a page a POST rendered, the
// time zone form comes back to the page the POST was sent from when the
// Referer is this site's and a page (filters and all), else to the
// nearest page above the POST's path. A Referer of another site, or one
// whose path names another host, is never taken: saving the setting is
// no redirect off the console. A GET page comes back to itself.
func TestTimeZoneFormReturnsToAPageOfThisSite(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "*:auditor")
	id := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	dl := "/deadletters/" + strconv.FormatInt(id, 10)
	discard := func(referer string) string {
		t.Helper()
		hdr := map[string]string{}
		if referer != "" {
			hdr["Referer"] = referer
		}
		resp := b.Do(t, oncall, "POST", dl+"/discard", url.Values{"reason": {"duplicate of ord-1"}}, hdr)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		return timeZoneReturn(t, resp)
	}

	assert.Equal(t, dl, discard(""), "no Referer: the dead letter above the POST's path")
	assert.Equal(t, dl+"?tab=trail", discard(b.URL()+dl+"?tab=trail"), "the page the form was on")
	assert.Equal(t, "/deadletters?tenant=acme&status=new", discard(b.URL()+"/deadletters?tenant=acme&status=new"))
	for _, ref := range []string{
		"https://evil.example/deadletters",
		"//evil.example/deadletters",
		b.URL() + "//evil.example/deadletters",
		b.URL() + "/\\evil.example/deadletters",
		"javascript:alert(1)",
		b.URL() + dl + "/discard", // a page a POST rendered: no GET page
		b.URL() + "/no/such/page",
	} {
		assert.Equal(t, dl, discard(ref), "Referer %q is not taken", ref)
	}

	verified := b.Do(t, auditor, "POST", "/audit/verify", url.Values{}, nil)
	assert.Equal(t, "/audit", timeZoneReturn(t, verified), "the chain check's result: the audit log, not GET /audit/verify (no such event)")

	list := b.Do(t, oncall, "GET", "/deadletters?tenant=acme", nil, nil)
	assert.Equal(t, "/deadletters?tenant=acme", timeZoneReturn(t, list), "a GET page comes back to itself")

	for _, back := range []string{timeZoneReturn(t, verified), dl} {
		c := oncall
		if back == "/audit" {
			c = auditor
		}
		saved := b.Do(t, c, "POST", "/settings/time", url.Values{"time_zone": {"utc"}, "return_to": {back}}, nil)
		require.Equal(t, http.StatusSeeOther, saved.Status, saved.Body)
		require.Equal(t, back, saved.Header.Get("Location"))
		assert.Equal(t, http.StatusOK, b.Do(t, c, "GET", back, nil, nil).Status, back)
	}
}
