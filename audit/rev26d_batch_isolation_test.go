package audit_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevOps26AppendBatchRefusesAStricterIsolation: AppendBatch, as
// Append, reads the chain's head after taking the chain's lock, which
// only READ COMMITTED sees: in REPEATABLE READ or SERIALIZABLE the
// transaction's snapshot may predate the previous append, and the batch
// would reuse its seqs (a unique violation under load, a chain forked
// from a stale head). Both must refuse such a transaction with the
// reason, before writing anything, whatever the batch holds.
func TestRevOps26AppendBatchRefusesAStricterIsolation(t *testing.T) {
	t.Parallel()
	for name, level := range map[string]pgx.TxIsoLevel{"RepeatableRead": pgx.RepeatableRead, "Serializable": pgx.Serializable} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			appendAll(t, b, event("before"))
			err := pgx.BeginTxFunc(b.ctx, b.db.Pool, pgx.TxOptions{IsoLevel: level}, func(tx pgx.Tx) error {
				_, err := audit.AppendBatch(b.ctx, tx, []audit.Event{event("one"), event("two")})
				return err
			})
			require.ErrorContains(t, err, "appends need read committed")
			res := requireIntact(t, b, 1)
			assert.Equal(t, int64(1), res.HeadSeq, "nothing of the batch was written")
		})
	}
}
