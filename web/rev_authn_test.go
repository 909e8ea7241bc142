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

// TestRevokedPersonNotListedAsRoleHolder (review rev-authn): an admin ends
// every session of an approver (Sign out everywhere: their directory entry
// is revoked, groups cleared; the worker gives them no right) and opens
// "who holds which role" to check. authz.Holders reads the newest
// user_sessions row whatever its state (ended, revoked), so the person is
// still listed as holding approver in acme through the group, as if
// nothing had happened; the page says nothing of the revocation.
func TestRevokedPersonNotListedAsRoleHolder(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	admin, _ := b.SignIn(t, "*:admin")
	_, approver := b.SignIn(t, "acme:approver")

	resp := b.Do(t, admin, "POST", "/admin/sessions/revoke", url.Values{"issuer": {approver.Issuer}, "subject": {approver.Subject}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	page := b.Do(t, admin, "GET", "/admin/bindings", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	var listed []string
	byID(page.Doc(t), "holder-row").Each(func(_ int, s *goquery.Selection) {
		if s.AttrOr("data-person", "") == approver.Email {
			listed = append(listed, s.AttrOr("data-tenant", "")+":"+s.AttrOr("data-role", ""))
		}
	})
	assert.Empty(t, listed, "a person whose sessions an admin ended (directory revoked) is still shown holding roles through their group")
}
