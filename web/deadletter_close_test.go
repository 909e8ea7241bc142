package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestCloseOneRefusedLikeTheDeadLettersOtherActions: closing one dead
// letter that the person may read but not close where it is answers 403,
// audited in its tenant, as its payload does; one of a tenant they cannot
// read answers 404, as if there were none.
func TestCloseOneRefusedLikeTheDeadLettersOtherActions(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	// May discard and resolve in globex (so the routes let them through),
	// only read in acme.
	reader, u := b.SignIn(t, "acme:viewer", "globex:oncall")
	stranger, _ := b.SignIn(t, "globex:oncall")
	id := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	form := url.Values{"reason": {"x"}, "version": {"1"}, "confirmed": {"1"}}

	payload := b.Do(t, reader, "GET", fmt.Sprintf("/deadletters/%d/payload", id), nil, nil)
	assert.Equal(t, http.StatusForbidden, payload.Status, "the payload route, for comparison")
	for _, verb := range []string{"discard", "resolve"} {
		path := fmt.Sprintf("/deadletters/%d/%s", id, verb)
		before := b.AuditCount(t, "action = 'authz.denied' AND tenant = 'acme' AND actor_subject = $1", u.Subject)
		resp := b.Do(t, reader, "POST", path, form, nil)
		assert.Equal(t, http.StatusForbidden, resp.Status, "%s of a dead letter the person reads", verb)
		assert.Equal(t, before+1, b.AuditCount(t, "action = 'authz.denied' AND tenant = 'acme' AND actor_subject = $1", u.Subject), "%s: audited in acme", verb)
		assert.Equal(t, http.StatusNotFound, b.Do(t, stranger, "POST", path, form, nil).Status, "%s of another tenant's dead letter", verb)
	}
	assert.Zero(t, b.AuditCount(t, "action IN ('deadletter.discard', 'deadletter.resolve')"), "nothing was closed")
}
