package web_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestHeadAnswersLikeGet: a monitor or a link checker that asks HEAD of a
// probe or a page gets what GET would answer, without a body (it got 405).
// Never of a GET with an effect: the sign-in flow's steps and the audited
// downloads answer HEAD 405, so HEAD neither starts a sign-in nor writes an
// audit row.
func TestHeadAnswersLikeGet(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "head-probe", nil)
	anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	for _, path := range []string{"/healthz", "/readyz"} {
		r := b.Do(t, anon, http.MethodHead, path, nil, nil)
		assert.Equal(t, http.StatusOK, r.Status, path)
	}
	for _, path := range []string{"/", "/deadletters", "/deadletters/" + strconv.FormatInt(id, 10), "/replay/requests"} {
		get := b.Do(t, c, http.MethodGet, path, nil, nil)
		head := b.Do(t, c, http.MethodHead, path, nil, nil)
		assert.Equal(t, get.Status, head.Status, path)
		assert.Equal(t, get.Header.Get("Content-Type"), head.Header.Get("Content-Type"), path)
		assert.Empty(t, head.Body, path)
	}
	// Signed out: the page's own answer (to sign in), not 405.
	assert.Equal(t, b.Do(t, anon, http.MethodGet, "/deadletters", nil, nil).Status, b.Do(t, anon, http.MethodHead, "/deadletters", nil, nil).Status)

	audited := b.AuditCount(t, "true")
	for _, path := range []string{"/auth/login", "/auth/callback", "/deadletters/" + strconv.FormatInt(id, 10) + "/payload", "/audit/export.csv"} {
		r := b.Do(t, c, http.MethodHead, path, nil, nil)
		assert.Equal(t, http.StatusMethodNotAllowed, r.Status, "HEAD %s has an effect GET has", path)
	}
	assert.Equal(t, audited, b.AuditCount(t, "true"), "no HEAD wrote an audit row")
}
