package web_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevHarden31OnePersonCannotHoldEveryConnection: one person's cookie
// in a script that loops over the pages (each statement may run for the
// statement timeout) held as many of the web pool's connections as it
// sent requests, and every other request's session read waits for one:
// everyone's pages stalled, the emergency stop's too. A person has at most
// 10 requests running at once on a replica (half the web pool's 20),
// counted from their session's read (a dead letter's page reads the dead letter in its locator, before
// the handler): the eleventh waits a moment for one of them, then is refused
// (429, Retry-After); another person's page, and the person's own
// emergency stop page (a bound of its own), are served meanwhile.
func TestRevHarden31OnePersonCannotHoldEveryConnection(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	script, _ := b.SignIn(t, "acme:oncall", "acme:approver")
	other, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rev31-held-1", Error: "boom"})
	page := fmt.Sprintf("/deadletters/%d", id)
	require.Equal(t, http.StatusOK, b.Do(t, script, "GET", page, nil, nil).Status)

	// The lists' reads wait while the test holds the table.
	tx, err := b.DB.OwnerPool.Begin(t.Context())
	require.NoError(t, err)
	released := false
	release := func() {
		if !released {
			released = true
			require.NoError(t, tx.Rollback(t.Context()))
		}
	}
	t.Cleanup(release)
	_, err = tx.Exec(t.Context(), `LOCK TABLE dead_letters IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	const held = 10
	statuses := make([]int, held)
	var wg sync.WaitGroup
	for i := range held {
		wg.Go(func() { statuses[i] = b.Do(t, script, "GET", page, nil, nil).Status })
	}
	// Seen as the server's administrator: another role's waits are not
	// shown to the owner.
	admin, err := pgx.Connect(t.Context(), b.DB.AdminURL)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close(t.Context()) })
	wait.Until(t, "ten page reads waiting on the table", 30*time.Second, func() bool {
		var n int
		require.NoError(t, admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'quarantine-web' AND wait_event_type = 'Lock'`).Scan(&n))
		return n >= held
	})

	eleventh := b.Do(t, script, "GET", page, nil, nil)
	assert.Equal(t, http.StatusTooManyRequests, eleventh.Status)
	assert.NotEmpty(t, eleventh.Header.Get("Retry-After"))
	assert.Contains(t, eleventh.Body, "10 requests running at once")
	assert.Equal(t, http.StatusOK, b.Do(t, script, "GET", "/replay/stop", nil, nil).Status, "the emergency stop's page is never held back")
	assert.Equal(t, http.StatusOK, b.Do(t, other, "GET", "/replay/requests", nil, nil).Status, "another person's page is served")

	release()
	wg.Wait()
	for i, s := range statuses {
		assert.Equal(t, http.StatusOK, s, "held request %d", i)
	}
	assert.Equal(t, http.StatusOK, b.Do(t, script, "GET", page, nil, nil).Status, "once they finished, the next is served")
}
