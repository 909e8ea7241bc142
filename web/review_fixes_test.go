package web_test

// Review (rev-fixes): neighbouring paths of this session's fixes.

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestCrossSiteNavigationWritesNoDenial: 98eb344 refuses a cross-site GET
// that writes "before anything is written, not even a denial, which would
// again be a row under the person that another site chose to write". Only
// the four routes marked writes() are refused; every other GET still
// writes a denial when another site navigates a signed-in person to an
// object or page outside their scope: an acme on-call sent to globex's dead
// letter gets an authz.denied row ("object of a tenant outside the caller's
// scope") under their name, as often as the other site likes; sent to a
// page they hold no permission for, the same.
func TestCrossSiteNavigationWritesNoDenial(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	globex := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: "g-1"})
	c, me := b.SignIn(t, "acme:oncall")
	cross := map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Referer": "https://evil.example/"}
	for _, path := range []string{fmt.Sprintf("/deadletters/%d", globex), "/admin/sessions"} {
		before := b.AuditCount(t, "actor_subject = $1", me.Subject)
		resp := b.Do(t, c, http.MethodGet, path, nil, cross)
		require.GreaterOrEqual(t, resp.Status, http.StatusBadRequest, "%s: refused", path)
		assert.Equal(t, before, b.AuditCount(t, "actor_subject = $1", me.Subject),
			"%s: a navigation another site started writes a denial under the on-call", path)
	}
}
