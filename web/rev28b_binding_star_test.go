package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevPath28TenantAdminCannotGrantOrRemoveAnEveryTenantBinding: the
// admin of acme manages acme's bindings, and no binding in "*" (every
// tenant): granting one would make anyone, themselves included, admin of
// every tenant; removing one would take a global admin's role away. Both
// are refused (403: "*" is every tenant, theirs to know of), audited as
// denied, and the bindings stay as they were; the same admin grants a
// role in acme.
func TestRevPath28TenantAdminCannotGrantOrRemoveAnEveryTenantBinding(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	root, _ := b.SignIn(t, "*:admin")
	acmeAdmin, acmeUser := b.SignIn(t, "acme:admin")
	resp := b.Do(t, root, "POST", "/admin/bindings", url.Values{"email": {"rev28b-global@example.com"}, "role": {"auditor"}, "tenant": {"*"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	var globalID string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id::text FROM role_bindings WHERE subject = 'email:rev28b-global@example.com'`).Scan(&globalID))
	count := func(where string, args ...any) int {
		t.Helper()
		var n int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM role_bindings WHERE `+where, args...).Scan(&n))
		return n
	}

	resp = b.Do(t, acmeAdmin, "POST", "/admin/bindings", url.Values{"email": {acmeUser.Email}, "role": {"admin"}, "tenant": {"*"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "an admin of acme grants no role in every tenant")
	assert.Zero(t, count(`tenant = '*' AND subject = $1`, "email:"+acmeUser.Email), "no binding in every tenant was made")

	resp = b.Do(t, acmeAdmin, "POST", "/admin/bindings/"+globalID+"/delete", url.Values{}, nil)
	assert.NotEqual(t, http.StatusSeeOther, resp.Status, "an admin of acme removes no binding in every tenant")
	assert.Equal(t, 1, count(`id = $1::bigint`, globalID), "the global auditor keeps their role")
	assert.Zero(t, b.AuditCount(t, "action = 'binding.delete' AND actor_subject = $1", acmeUser.Subject), "no removal recorded")
	assert.Equal(t, 2, b.AuditCount(t, "action = 'authz.denied' AND actor_subject = $1", acmeUser.Subject), "both attempts are audited")

	resp = b.Do(t, acmeAdmin, "POST", "/admin/bindings", url.Values{"email": {"rev28b-acme@example.com"}, "role": {"viewer"}, "tenant": {"acme"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, "the same admin manages acme: %s", resp.Body)
	assert.Equal(t, 1, count(`tenant = 'acme' AND subject = 'email:rev28b-acme@example.com'`))
}
