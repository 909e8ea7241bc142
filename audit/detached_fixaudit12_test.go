package audit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestFixAudit12RowsOfTheirOwnOutliveTheCallersContext: AppendFunc and
// AppendBatchFunc, the writes every denial path shares (web's refusals,
// the replay service's, dlq's refused selections), write their rows even
// when the caller's context has ended: a client that hangs up cancels its
// request's context, and the attempt it made must still be recorded.
func TestFixAudit12RowsOfTheirOwnOutliveTheCallersContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gone, cancel := context.WithCancel(b.ctx)
	cancel()

	one, err := audit.AppendFunc(gone, b.db.Pool, event("fixaudit12.one"))
	require.NoError(t, err, "a row of its own is written after its caller's context ended")
	batch, err := audit.AppendBatchFunc(gone, b.db.Pool, []audit.Event{event("fixaudit12.two"), event("fixaudit12.three")})
	require.NoError(t, err, "a batch of its own is written after its caller's context ended")
	require.Len(t, batch, 2)

	var n int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_log WHERE action LIKE 'fixaudit12.%'`).Scan(&n))
	assert.Equal(t, 3, n)
	assert.Equal(t, one.Seq+1, batch[0].Seq)
	requireIntact(t, b, 3)
}
