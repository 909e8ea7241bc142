package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb13StopOfAnotherTenantIsRefusedWhateverItsText: POST
// /replay/stop names its tenant in the form (NamedTenant): a tenant where
// the person holds no role answers 404 and the attempt is audited
// (refuseNamed), as routes.go declares for every such route. Since round
// 12 replayStopAll answers a reason or typed STOP that PostgreSQL could not
// store (a NUL, a byte that is not UTF-8) first, with the stop page (422),
// before it asks whether the person may stop anything in the tenant: an
// emergency stop aimed at another tenant, sent with such a byte, is
// answered 422 and leaves no authz.denied row in that tenant's log.
//
// Severity: low. Nothing is stopped and nothing of the other tenant is
// shown; but a probe of another tenant's emergency stop goes unrecorded,
// where the same probe without the byte is recorded.
// Expected: the tenant is judged first (refuseNamed: 404, audited in
// globex), then the text.
func TestRevWeb13StopOfAnotherTenantIsRefusedWhateverItsText(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	approver, _ := b.SignIn(t, "acme:approver")
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	plain := b.Do(t, approver, http.MethodPost, "/replay/stop", url.Values{"tenant": {"globex"}, "reason": {"probe"}, "confirm": {"STOP"}}, page)
	assert.Equal(t, http.StatusNotFound, plain.Status, "a tenant where the person holds no role is not found")
	recorded := b.AuditCount(t, "tenant = 'globex' AND action = 'authz.denied'")
	assert.Equal(t, 1, recorded, "the probe is audited in globex")

	for _, form := range []url.Values{
		{"tenant": {"globex"}, "reason": {"probe\x00"}, "confirm": {"STOP"}},
		{"tenant": {"globex"}, "reason": {"probe"}, "confirm": {"STOP\xff"}},
	} {
		resp := b.Do(t, approver, http.MethodPost, "/replay/stop", form, page)
		assert.Equal(t, http.StatusNotFound, resp.Status, "a stop of another tenant with reason %q confirm %q", form.Get("reason"), form.Get("confirm"))
	}
	assert.Equal(t, recorded+2, b.AuditCount(t, "tenant = 'globex' AND action = 'authz.denied'"),
		"each probe of globex's emergency stop is audited there, whatever bytes its reason holds")
}
