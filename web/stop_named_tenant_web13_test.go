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

// TestRevWeb13BindingInAnotherTenantIsRefusedWhateverItsFields: the same
// order in POST /admin/bindings (NamedTenant): a binding asked for in a
// tenant where the admin holds no role is refused (404, audited there)
// only when every field is valid; with a mistake in another field (an
// email that is not one, a role misspelt, a NUL) the form answers 422
// with the other tenant's name kept in it, and nothing is audited.
//
// Severity: low, as for the emergency stop: an admin of one tenant
// probing another's bindings leaves no row there when the form has a
// mistake. Expected: the tenant is judged before the rest of the form.
func TestRevWeb13BindingInAnotherTenantIsRefusedWhateverItsFields(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	admin, _ := b.SignIn(t, "acme:admin")
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	plain := b.Do(t, admin, http.MethodPost, "/admin/bindings", url.Values{"tenant": {"globex"}, "role": {"admin"}, "email": {"mallory@example.com"}}, page)
	assert.Equal(t, http.StatusNotFound, plain.Status, "a tenant where the admin holds no role is not found")
	recorded := b.AuditCount(t, "tenant = 'globex' AND action = 'authz.denied'")
	assert.Equal(t, 1, recorded, "the attempt is audited in globex")

	for _, form := range []url.Values{
		{"tenant": {"globex"}, "role": {"admin"}, "email": {"mallory"}},
		{"tenant": {"globex"}, "role": {"admn"}, "email": {"mallory@example.com"}},
		{"tenant": {"globex"}, "role": {"admin"}, "email": {"mallory@example.com\x00"}},
	} {
		resp := b.Do(t, admin, http.MethodPost, "/admin/bindings", form, page)
		assert.Equal(t, http.StatusNotFound, resp.Status, "a binding in another tenant, email %q role %q", form.Get("email"), form.Get("role"))
	}
	assert.Equal(t, recorded+3, b.AuditCount(t, "tenant = 'globex' AND action = 'authz.denied'"),
		"each attempt on globex's bindings is audited there, whatever mistake its other fields hold")
}
