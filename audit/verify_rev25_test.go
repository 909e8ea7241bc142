package audit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevAudit25VerifyFlagsAVersionGoingBack: after an entry of hash
// version 3, a row of the older encoding (no nonce, no content digest) is
// an inserted row, whose stub in a filtered export could not be proven.
// The database refuses one (TestV3DatabaseKeepsVersionsInOrder); the
// owner, who may disable the trigger, writes it with a hash that is right
// for its encoding and a correct link. Verify alone stands between it and
// an intact-looking chain: it must name the row.
func TestRevAudit25VerifyFlagsAVersionGoingBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	appendAll(t, b, event("one"), event("two"))
	requireIntact(t, b, 2)
	tamper(t, b, `INSERT INTO audit_log (seq, at, action, outcome, actor_email_verified, prev_hash, hash)
        SELECT 3, at + interval '1 second', 'old.console', 'ok', false, hash, hash FROM audit_log WHERE seq = 2`,
		`UPDATE audit_log SET hash = audit_entry_hash(audit_log) WHERE seq = 3`)

	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	assert.False(t, res.OK(), "a version 2 row after version 3 rows verified: %s", res)
	assert.Equal(t, int64(3), res.FirstBad)
	assert.Contains(t, res.Problem, "versions never go back")
}
