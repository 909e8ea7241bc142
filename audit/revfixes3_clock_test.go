package audit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// rev-fixes3: Append (fix-audit-chain) dates an entry GREATEST(the
// database clock, the head's at) so that a clock set back does not stop
// appends; the trigger of migration 0034 refuses any at more than a minute
// ahead of clock_timestamp(). So after the database clock goes back by
// more than a minute (an NTP step, a failover to a host whose clock is
// behind, a VM restored), every append is refused until the clock catches
// up with the newest entry: every audited action of the product fails.
// The head dated 5 minutes ahead stands for "the clock was 5 minutes
// ahead when it was appended, and has been set right since".
func TestRevFixes3AppendAfterClockSetBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	appendAll(t, b, event("login"))
	tamper(t, b, `UPDATE audit_log SET at = clock_timestamp() + interval '5 minutes' WHERE seq = 1`,
		`UPDATE audit_log SET hash = audit_entry_hash(audit_log) WHERE seq = 1`)
	_, err := audit.AppendFunc(b.ctx, b.db.Pool, event("login"))
	require.NoError(t, err, "an append after the database clock went back 5 minutes")
	_, err = audit.AppendBatchFunc(b.ctx, b.db.Pool, []audit.Event{event("login")})
	require.NoError(t, err, "a batch append after the database clock went back 5 minutes")
}
