package audit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRev36VerifyWithoutKeyIsNotTampering: Verify given no public key
// marked every checkpoint of an intact log as a problem ("audit chain
// BROKEN"), so an auditor who forgot --public-key was told the log had
// been tampered with. A signature nobody could check is a check not made:
// the result is not OK, says what was not checked (ErrNotChecked), and
// names no problem. What a key is not needed for is still found: an
// edited entry, a deleted one, or a checkpoint past the log's end.
func TestRev36VerifyWithoutKeyIsNotTampering(t *testing.T) {
	t.Parallel()
	logWithCheckpoint := func(t *testing.T) bundle {
		b := setup(t)
		appendAll(t, b, event("auth.login"), event("auth.login"), event("auth.login"))
		_, err := audit.Record(b.ctx, b.db.Pool, newSigner(t), audit.ReasonOnDemand) // at seq 3
		require.NoError(t, err)
		appendAll(t, b, event("auth.logout"), event("auth.logout"))
		return b
	}

	t.Run("IntactIsNotChecked", func(t *testing.T) {
		t.Parallel()
		b := logWithCheckpoint(t)
		res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{})
		require.NoError(t, err)
		assert.False(t, res.OK(), "a signature nobody checked vouches for nothing: %s", res)
		assert.False(t, res.Broken(), "and says nothing of tampering: %s", res)
		assert.Empty(t, res.Problems)
		assert.Equal(t, int64(5), res.HeadSeq)
		assert.Contains(t, res.Unchecked, "no public key was given to check the signatures of 1 checkpoint (the newest at seq 3")
		assert.ErrorIs(t, res.Err(), audit.ErrNotChecked)
		assert.NotErrorIs(t, res.Err(), audit.ErrChainBroken)
		assert.Contains(t, res.String(), "audit chain NOT CHECKED")
		assert.NotContains(t, res.String(), "BROKEN")
	})

	for _, tc := range []struct {
		name, sql, problem string
	}{
		{"EditedEntry", `UPDATE audit_log SET reason = 'edited' WHERE seq = 2`, "seq 2: hash does not match its contents"},
		{"DeletedEntry", `DELETE FROM audit_log WHERE seq = 4`, "seq 4: missing"},
		{"TailCut", `DELETE FROM audit_log WHERE seq >= 3`, "checkpoint at seq 3: the log ends at seq 2"},
	} {
		t.Run(tc.name+"IsBroken", func(t *testing.T) {
			t.Parallel()
			b := logWithCheckpoint(t)
			tamper(t, b, tc.sql)
			res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{})
			require.NoError(t, err)
			assert.True(t, res.Broken(), "tampering a key is not needed to see: %s", res)
			assert.Contains(t, res.Problem, tc.problem)
			assert.ErrorIs(t, res.Err(), audit.ErrChainBroken)
			assert.Contains(t, res.String(), "audit chain BROKEN")
		})
	}
}
