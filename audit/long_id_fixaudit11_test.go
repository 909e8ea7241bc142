package audit_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// TestFixAudit11LongIDsKeyed: a long operation id is keyed as a long
// message id is (two sharing their first bytes stay apart); the message
// key itself, as a row shows it and its link passes it, filters to the
// same rows as the whole id; a short id is stored as it is.
func TestFixAudit11LongIDsKeyed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := "op-" + strings.Repeat("é", 400) // 803 bytes of two-byte characters
	ea, ec, es := event("deadletter.discard"), event("deadletter.discard"), event("deadletter.discard")
	ea.MessageID, ea.OperationID = long+"a", long+"a"
	ec.MessageID, ec.OperationID = long+"b", long+"b"
	es.MessageID, es.OperationID = "short", "short-op"
	entries := appendAll(t, b, ea, ec, es)

	assert.NotEqual(t, entries[0].OperationID, entries[1].OperationID, "two operations stay apart")
	assert.Equal(t, audit.OperationKey(long+"a"), entries[0].OperationID)
	assert.True(t, quarantine.IsBoundedKey(entries[0].MessageID))
	assert.LessOrEqual(t, len(entries[0].MessageID), 512)
	assert.Equal(t, "short", entries[2].MessageID)
	assert.Equal(t, "short-op", entries[2].OperationID)

	for _, by := range []string{long + "a", entries[0].MessageID} {
		page, err := audit.List(b.ctx, b.db.Pool, audit.Filter{MessageID: by})
		require.NoError(t, err)
		assert.Equal(t, []int64{entries[0].Seq}, seqsOf(page.Entries), "the filter by %.20q…", by)
	}
}
