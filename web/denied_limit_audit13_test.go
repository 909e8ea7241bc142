package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevAudit13LimitedRefusalsLeaveATrace: the refusals the per-person
// limit does not write (authz.CrossSiteDenials: a person who holds no
// role, or whose request says another site started it; a burst of 10,
// then one a minute) are counted in the replica's memory only, and the
// count reaches the log only on that person's next refusal that is
// written (noteUnwritten). A person who stops, whose sessions an admin
// ends (they can never be refused as themselves again), or whose replica
// restarts leaves a log that shows ten refusals however many there were:
// the auditor reading a dismissed employee's attempts sees 10 where there
// were 40, and nothing in the log says any were left out. The first
// refusal over the limit (or the moment it is reached) should leave a row
// saying that further refusals of the person are being counted, not
// written.
func TestRevAudit13LimitedRefusalsLeaveATrace(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	client, who := b.SignIn(t, "engineering") // no role
	const tries = 40
	for range tries {
		require.Equal(t, http.StatusForbidden, b.Do(t, client, http.MethodGet, "/", nil, nil).Status)
	}
	rows := b.AuditCount(t, `outcome = 'denied' AND actor_subject = $1`, who.Subject)
	require.Less(t, rows, tries, "precondition: the refusals are limited")
	marked := b.AuditCount(t, `outcome = 'denied' AND actor_subject = $1 AND (reason LIKE '%limit%' OR reason LIKE '%not written%')`, who.Subject)
	assert.NotZero(t, marked, "%d of %d refusals are in the log and no row says the others were left out", rows, tries)
}
