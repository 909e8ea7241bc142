package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestErrorPageKnowsWhoIsSignedIn: a path no route answers never reaches a
// route's middleware, yet its 404 page shows the person signed in (their
// name, their links), not a "Sign in" button that would send them through
// the provider again; a visitor with no session still sees "Sign in".
func TestErrorPageKnowsWhoIsSignedIn(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, u := b.SignIn(t, "acme:oncall")

	for _, path := range []string{"/no-such-page", "/deadletters/1/nothing-here", "/static/none.css"} {
		resp := b.Do(t, oncall, http.MethodGet, path, nil, nil)
		assert.Equal(t, http.StatusNotFound, resp.Status, path)
		d := resp.Doc(t)
		assert.Equal(t, 0, byID(d, "sign-in").Length(), "%s: a signed-in person is not asked to sign in", path)
		assert.Contains(t, byID(d, "user-name").Text(), u.Email, path)
		assert.Equal(t, 1, d.Find(`nav a[href="/deadletters"]`).Length(), "%s: their links are there", path)
	}

	anon := testfactory.NoFollow(nil)
	resp := b.Do(t, anon, http.MethodGet, "/no-such-page", nil, nil)
	assert.Equal(t, http.StatusNotFound, resp.Status)
	assert.Equal(t, 1, byID(resp.Doc(t), "sign-in").Length(), "nobody signed in: the page offers to sign in")
}
