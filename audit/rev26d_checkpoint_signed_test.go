package audit_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevOps26ACheckpointsSignedFieldsCannotBeEdited: a checkpoint's
// signature covers its seq, hash, date, reason and key (signedBytes). The
// schema's owner, who can rewrite the log with fresh hashes, can also
// turn off the checkpoints' triggers: one that rewrites the log after a
// checkpoint, then gives the checkpoint the new entry's hash, must not
// get a log that verifies, nor one who re-dates a checkpoint or changes
// why it was taken. Each edit below leaves the chain itself intact, so
// only the signature can tell.
func TestRevOps26ACheckpointsSignedFieldsCannotBeEdited(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// edit returns the statements that edit the checkpoint at seq 4,
		// after the log was rewritten from seq 3 on (rewritten: the new
		// hash of seq 4).
		edit func(rewritten []byte) []string
	}{
		{"HashRepointedAtARewrittenLog", func(rewritten []byte) []string {
			return []string{fmt.Sprintf(`UPDATE audit_checkpoints SET hash = '\x%x' WHERE seq = 4`, rewritten)}
		}},
		{"Redated", func([]byte) []string {
			return []string{`UPDATE audit_checkpoints SET at = at - interval '1 day' WHERE seq = 4`}
		}},
		{"ReasonChanged", func([]byte) []string {
			return []string{`UPDATE audit_checkpoints SET reason = 'purge' WHERE seq = 4`}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			signer := newSigner(t)
			keys := audit.NewKeySet(signer.PublicKey())
			appendAll(t, b, event("one"), event("two"), event("three"), event("four"))
			cp, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonOnDemand)
			require.NoError(t, err)
			require.Equal(t, int64(4), cp.Seq)
			res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
			require.NoError(t, err)
			require.True(t, res.OK(), "precondition: %s", res.String())
			require.Equal(t, 1, res.Checkpoints)

			rewritten := cp.Hash
			if tc.name == "HashRepointedAtARewrittenLog" {
				// The tail rewritten, chained afresh from the genuine seq 2.
				tamper(t, b, `DELETE FROM audit_log WHERE seq > 2`)
				forged := appendAll(t, b, event("forged three"), event("forged four"))
				rewritten = forged[1].Hash
				require.NotEqual(t, cp.Hash, rewritten)
			}
			tamperCheckpoints(t, b, tc.edit(rewritten)...)

			res, err = audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
			require.NoError(t, err)
			assert.False(t, res.OK(), "an edited checkpoint vouched for the log: %s", res.String())
			assert.Equal(t, int64(4), res.FirstBad, res.String())
			assert.Contains(t, res.Problem, "checkpoint at seq 4: signature does not verify with key "+signer.KeyID())
			assert.Zero(t, res.Checkpoints, "no checkpoint verified")
		})
	}
}
