package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb7PagesShowingPayloadsAreNotStored: a dead letter's page shows
// its payload, headers, error text and stack trace (customer data, tokens
// a producer put in a header), and a replay request's page shows the
// payloads it will send. The downloads of the same bytes are sent with
// "Cache-Control: no-store" (sendDownload: "browsers never ... cache"),
// but the HTML pages that show them carry no Cache-Control at all: a
// browser keeps them in its disk cache and shows them again from the
// history or the Back button after the person signed out (a shared
// jump-host browser, a kiosk), and any shared cache between the console
// and the browser may keep them heuristically.
//
// Severity: low. Expected: every page of a signed-in person, and at least
// every page that shows what a producer sent, is answered with
// "Cache-Control: no-store" as the downloads are.
func TestRevWeb7PagesShowingPayloadsAreNotStored(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	const secret = "card-4111-1111-1111-1111"
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{
		Tenant: "acme", MsgID: "rev-web7-cache", Payload: []byte(`{"card":"` + secret + `"}`),
		Headers: map[string][]string{"Authorization": {"Bearer " + secret}},
	})
	oncall, _ := b.SignIn(t, "acme:oncall")

	// The download of the payload is not stored: the rule the console follows.
	dl := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d/payload", id), nil, nil)
	require.Equal(t, http.StatusOK, dl.Status)
	require.Equal(t, "no-store", dl.Header.Get("Cache-Control"))

	// The page that shows the same payload and the header is.
	page := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	require.Contains(t, page.Body, secret, "the page shows the payload")
	assert.True(t, strings.Contains(page.Header.Get("Cache-Control"), "no-store"),
		"the dead letter's page, which shows its payload and headers, may be stored by the browser: Cache-Control %q",
		page.Header.Get("Cache-Control"))
}
