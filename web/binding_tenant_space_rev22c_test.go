package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevGov22BindingInEdgeSpaceTenantGrantsAnother: a producer's
// dlq.acme<U+00A0>.orders.refund makes tenant "acme\u00a0" (kept as its own
// tenant since round 21: a link made from it lists it, not acme). The
// bindings page offers it in its Tenant select. But bindingAdd reads the
// form through authz.BindingInput.Validate, which trims the tenant with
// strings.TrimSpace (Unicode white space, U+00A0 among it): the binding an
// admin of every tenant adds "in acme<U+00A0>" is stored, and grants, in
// tenant acme, a tenant the admin never chose; and an admin of
// acme<U+00A0> (by group) who adds a binding in their own tenant is refused,
// audited as a probe of acme (a tenant they hold no role in).
//
// Expected: the tenant chosen is the tenant bound (trimmed only of the
// ASCII white space no subject token holds, as formText.get and the
// filters since round 21).
func TestRevGov22BindingInEdgeSpaceTenantGrantsAnother(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	const odd = "acme\u00a0"
	testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: odd, ItemType: "orders.refund", MsgID: "rev22c-bind-odd", Error: "refund failed"},
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "rev22c-bind-acme", Error: "refund failed"})
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}

	t.Run("AdminOfEveryTenant", func(t *testing.T) {
		admin, _ := b.SignIn(t, "*:admin")
		doc := b.Do(t, admin, http.MethodGet, "/admin/bindings", nil, page).Doc(t)
		offered := false
		doc.Find(`select[name="tenant"] option`).Each(func(_ int, s *goquery.Selection) {
			if s.AttrOr("value", "") == odd {
				offered = true
			}
		})
		require.True(t, offered, "the bindings form offers tenant acme<U+00A0>")

		form := url.Values{"tenant": {odd}, "role": {"oncall"}, "email": {"rev22c-bob@example.com"}}
		resp := b.Do(t, admin, http.MethodPost, "/admin/bindings", form, page)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		var tenants []string
		rows, err := b.Pool.Query(t.Context(), `SELECT tenant FROM role_bindings WHERE subject = 'email:rev22c-bob@example.com'`)
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			tenants = append(tenants, s)
		}
		require.NoError(t, rows.Err())
		assert.Equal(t, []string{odd}, tenants,
			"a binding added in tenant %q (chosen from the form's select) is stored in tenants %q", odd, tenants)
	})

	t.Run("AdminOfTheTenant", func(t *testing.T) {
		admin, _ := b.SignIn(t, odd+":admin")
		deniedAcme := b.AuditCount(t, "tenant = 'acme' AND action = 'authz.denied'")
		form := url.Values{"tenant": {odd}, "role": {"viewer"}, "email": {"rev22c-carol@example.com"}}
		resp := b.Do(t, admin, http.MethodPost, "/admin/bindings", form, page)
		assert.Equal(t, http.StatusSeeOther, resp.Status,
			"an admin of %q adding a binding in %q is answered %d", odd, odd, resp.Status)
		assert.Equal(t, deniedAcme, b.AuditCount(t, "tenant = 'acme' AND action = 'authz.denied'"),
			"the admin of %q is audited as having probed tenant acme", odd)
	})
}
