package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDexLoginShowsUserRoles signs every demo user in through Dex's real
// login form (over HTTP, no browser) and checks the console's header shows
// their name, tenants and roles; a wrong password stays at Dex and gives no
// session.
func TestDexLoginShowsUserRoles(t *testing.T) {
	t.Parallel()
	c := newStack(t, stackConfig{}).Console
	cases := []struct {
		email, name string
		roles       []string
	}{
		{userOncall, "Olga Oncall", []string{"acme", "globex", "oncall"}},
		{userApprover, "Arun Approver", []string{"acme", "globex", "approver"}},
		{userApprover2, "Bea Approver", []string{"acme", "globex", "approver"}},
		{userAuditor, "Ada Auditor", []string{"all tenants", "auditor"}},
		{userAdmin, "Sam Admin", []string{"all tenants", "admin"}},
		{userViewer, "Vic Viewer", []string{"acme", "viewer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := signInHTTP(t, c.URL, tc.email)
			assert.Equal(t, tc.name, strings.TrimSpace(h.Home.Find(`[data-testid="user-name"]`).Text()))
			roles := h.Home.Find(`[data-testid="user-roles"]`).Text()
			for _, want := range tc.roles {
				assert.Contains(t, roles, want)
			}
		})
	}

	t.Run("WrongPassword", func(t *testing.T) {
		_, err := trySignInHTTP(c.URL, userOncall, "wrong")
		var se *signInError
		require.True(t, errors.As(err, &se), "sign-in fails: %v", err)
		assert.False(t, strings.HasPrefix(se.at, c.URL), "still at Dex: %s", se.at)
		assert.Contains(t, strings.ToLower(se.body), "invalid")
	})

	t.Run("NoSessionWithoutSignIn", func(t *testing.T) {
		h := &httpSession{base: c.URL, client: &http.Client{}}
		status, _, err := h.Get(context.Background(), "/audit")
		require.NoError(t, err)
		assert.Equal(t, http.StatusFound, status, "sent to sign in")
	})
}
