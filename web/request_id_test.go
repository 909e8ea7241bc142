package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/logs"
)

// TestRequestIDServerGenerated: the id in the X-Request-ID response header,
// on error pages and in audit rows is the server's own; a client's
// X-Request-ID is only logged beside it, cut short.
func TestRequestIDServerGenerated(t *testing.T) {
	t.Parallel()
	logged := &logs.Buffer{}
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Log: logged})
	c, u := b.SignIn(t, "acme:viewer")
	idFormat := regexp.MustCompile(`^[a-z2-7]{16}$`)

	seen := map[string]bool{}
	for range 20 {
		resp := b.Do(t, c, "GET", "/healthz", nil, map[string]string{"X-Request-ID": "chosen-by-client"})
		id := resp.Header.Get("X-Request-ID")
		assert.Regexp(t, idFormat, id)
		assert.False(t, seen[id], "ids do not repeat")
		seen[id] = true
	}

	// A refused request is audited under the server's id.
	resp := b.Do(t, c, "GET", "/admin/bindings", nil, map[string]string{"X-Request-ID": "forged-id-" + strings.Repeat("z", 5000)})
	require.Equal(t, http.StatusForbidden, resp.Status)
	id := resp.Header.Get("X-Request-ID")
	require.Regexp(t, idFormat, id)
	assert.Contains(t, resp.Body, id, "the error page quotes the server's id")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'authz.denied' AND actor_subject = $1 AND request_id = $2", u.Subject, id))
	assert.Zero(t, b.AuditCount(t, "request_id LIKE 'forged%' OR request_id LIKE 'chosen%'"), "no client id reaches the audit log")

	// The client's id is logged beside the server's, bounded and printable.
	anon := testfactory.NoFollow(nil)
	resp = b.Do(t, anon, "GET", "/auth/callback?state=nope", nil, map[string]string{"X-Request-ID": "client-1234é" + strings.Repeat("q", 500)})
	require.Equal(t, http.StatusBadRequest, resp.Status)
	lines := logged.String()
	assert.Contains(t, lines, "request_id="+resp.Header.Get("X-Request-ID"))
	assert.Regexp(t, `(?m)client_request_id=client-1234\?\?q{51}( |$)`, lines)
}
