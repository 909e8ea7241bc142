package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixWeb14SessionsPageMarksTheAdminsOwn: the Sessions page marks the
// row of the admin viewing it "(you)", and its sign-out asks about this
// session too; nobody else's row is marked.
func TestFixWeb14SessionsPageMarksTheAdminsOwn(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	admin, me := b.SignIn(t, "*:admin")
	_, other := b.SignIn(t, "acme:oncall")

	resp := b.Do(t, admin, http.MethodGet, "/admin/sessions", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	mine := d.Find(`[data-testid="session-row"][data-subject="` + me.Subject + `"]`)
	require.Equal(t, 1, mine.Length())
	assert.Equal(t, "(you)", mine.Find(`[data-testid="session-own"]`).Text())
	confirm, _ := mine.Find(`[data-testid="session-revoke"]`).Attr("data-confirm")
	assert.Equal(t, "Sign yourself out of every session, this one too?", confirm)
	theirs := d.Find(`[data-testid="session-row"][data-subject="` + other.Subject + `"]`)
	require.Equal(t, 1, theirs.Length())
	assert.Zero(t, theirs.Find(`[data-testid="session-own"]`).Length())
}
