package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRemovedBindingRefusedAtNextRequest: once an admin's removal of a
// role binding has committed, the person's next request is refused on
// every replica, whether or not the replica's policy listener has heard of
// the change (here it never will: the replica's background work, the
// listener among it, does not run).
func TestRemovedBindingRefusedAtNextRequest(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	admin, _ := b.SignIn(t, "*:admin")
	bob, _ := b.SignInAs(t, testidp.Person{ID: "bob", Email: "bob@example.com", EmailVerified: true})
	get := func(base string) int {
		t.Helper()
		resp, err := bob.Get(base + "/deadletters")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}

	resp := b.Do(t, admin, "POST", "/admin/bindings", url.Values{"email": {"bob@example.com"}, "role": {"viewer"}, "tenant": {"acme"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	wait.Until(t, "bob to hold the role", 30*time.Second, func() bool { return get(b.URL()) == http.StatusOK })
	replica := b.IdleReplica(t)
	require.Equal(t, http.StatusOK, get(replica), "the replica loaded the binding when it started")

	var id string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id::text FROM role_bindings WHERE subject = 'email:bob@example.com'`).Scan(&id))
	resp = b.Do(t, admin, "POST", "/admin/bindings/"+id+"/delete", url.Values{}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	assert.Equal(t, http.StatusForbidden, get(replica), "the removed role gives nothing on the replica at the next request")
	assert.Equal(t, http.StatusForbidden, get(b.URL()), "nor where it was removed")
}
