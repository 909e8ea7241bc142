package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixMarkerAuthorNamed: the dead letter's page names who recorded a
// fix as every page names a person: a claimed address the provider did not
// verify is marked, an on-call without an email claim is their subject.
func TestFixMarkerAuthorNamed(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	claimant, _ := b.SignInAs(t, testidp.Person{ID: "claimant", Email: "lead@example.com", EmailVerified: false}, "acme:oncall")
	noEmail, _ := b.SignInAs(t, testidp.Person{ID: "no-email-oncall", EmailVerified: true}, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "author-1", Class: "schema_invalid",
		Error: "decode: unknown field", At: time.Now().Add(-time.Hour), Payload: []byte(`{}`)})
	fix := func(c *http.Client, ref string) {
		t.Helper()
		resp := b.Do(t, c, "POST", fmt.Sprintf("/deadletters/%d/fix", id), url.Values{"scope": {"item_type"},
			"fixed_at": {time.Now().UTC().Format("2006-01-02T15:04")}, "ref": {ref}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	}
	fix(claimant, "v-claimed")
	fix(noEmail, "v-no-email")

	var shown []string
	b.Do(t, claimant, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil).Doc(t).Find(`[data-testid="fix"]`).Each(func(_ int, s *goquery.Selection) {
		shown = append(shown, strings.Join(strings.Fields(s.Text()), " "))
	})
	require.Len(t, shown, 2)
	assert.Contains(t, strings.Join(shown, "\n"), "v-claimed (item type) · lead@example.com (unverified)")
	assert.Contains(t, strings.Join(shown, "\n"), "v-no-email (item type) · "+b.IdP.Subject("no-email-oncall"))
}
