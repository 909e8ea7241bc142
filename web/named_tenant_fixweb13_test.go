package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixWeb13NamedTenantIsJudgedFirst: every route whose form names its
// tenant (routes.go's NamedTenant) refuses a tenant outside the person's
// scope (404, audited there) whatever mistake the rest of the form holds;
// a tenant field that names no tenant at all is the form's mistake (422,
// nothing audited).
func TestFixWeb13NamedTenantIsJudgedFirst(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}
	const group = "0123456789abcdef"
	denied := func() int { return b.AuditCount(t, "tenant = 'globex' AND action = 'authz.denied'") }

	t.Run("GroupTriage", func(t *testing.T) {
		oncall, _ := b.SignIn(t, "acme:oncall")
		for path, form := range map[string]url.Values{
			"/groups/note":   {"note": {"probe\x00"}, "ticket": {"not a link"}},
			"/groups/owner":  {"owner": {"probe\xff"}},
			"/groups/snooze": {"for": {"forever"}, "grows": {"-1"}},
			"/groups/triage": {"for": {"forever"}, "ticket": {"javascript:alert(1)"}},
		} {
			before := denied()
			form.Set("tenant", "globex")
			form.Set("group", group)
			resp := b.Do(t, oncall, http.MethodPost, path, form, page)
			assert.Equal(t, http.StatusNotFound, resp.Status, path)
			assert.Equal(t, before+1, denied(), "%s: the probe of globex is audited there", path)
		}
	})
	t.Run("StopOfNoTenant", func(t *testing.T) {
		approver, _ := b.SignIn(t, "acme:approver")
		before := denied()
		for _, form := range []url.Values{
			{"tenant": {"globex\x00"}, "reason": {"probe"}, "confirm": {"STOP"}},
			{"tenant": {""}, "reason": {"probe\x00"}, "confirm": {"STOP"}},
			{"tenant": {"acme"}, "reason": {"probe\x00"}, "confirm": {"STOP"}},
		} {
			resp := b.Do(t, approver, http.MethodPost, "/replay/stop", form, page)
			assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "tenant %q reason %q", form.Get("tenant"), form.Get("reason"))
		}
		assert.Equal(t, before, denied())
	})
	t.Run("BindingOfNoTenant", func(t *testing.T) {
		admin, _ := b.SignIn(t, "acme:admin")
		all := b.AuditCount(t, "action = 'authz.denied'")
		for _, form := range []url.Values{
			{"tenant": {"glo bex"}, "role": {"admin"}, "email": {"mallory"}},
			{"tenant": {""}, "role": {"admin"}, "email": {"mallory@example.com\x00"}},
			{"tenant": {"globex\x00"}, "role": {"admin"}, "email": {"mallory@example.com"}},
			{"tenant": {"acme"}, "role": {"admn"}, "email": {"mallory@example.com"}},
		} {
			resp := b.Do(t, admin, http.MethodPost, "/admin/bindings", form, page)
			assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "tenant %q email %q role %q", form.Get("tenant"), form.Get("email"), form.Get("role"))
		}
		assert.Equal(t, all, b.AuditCount(t, "action = 'authz.denied'"), "a mistake of the form is no probe of a tenant")
		var n int
		require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT count(*) FROM role_bindings WHERE subject LIKE 'email:mallory%'`).Scan(&n))
		assert.Zero(t, n)
	})
}
