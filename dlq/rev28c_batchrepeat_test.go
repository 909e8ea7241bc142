package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevLeft28ARepeatWithinOneBatchIsStoredOnceInOneStatement: a batch
// holds one message twice (redelivered while its first copy waited in the
// batch) and nothing stored before. The message is stored once, the
// batch's other records each once, in one statement more than a batch
// without the repeat needs at most: the repeat is no refusal, so no
// record is isolated as PostgreSQL's (which IsolationStatements would
// count), none is reported raw or unstorable (both copies are acked), and
// the counters count each row once.
func TestRevLeft28ARepeatWithinOneBatchIsStoredOnceInOneStatement(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	at := time.Now().Truncate(time.Millisecond)
	rec := func(seq uint64) Record {
		return ParseDLQ("dlq", Received{Subject: "dlq.acme.orders.refund", Stream: "DLQ", Seq: seq, Time: at.Add(time.Duration(seq) * time.Millisecond),
			Data: []byte("p")})
	}
	res, err := b.store.Insert(ctx, []Record{rec(1), rec(2), rec(1), rec(3), rec(4), rec(1)})
	require.NoError(t, err)
	assert.Len(t, res.Inserted, 4, "records 1 to 4, each once")
	assert.Empty(t, res.Raw)
	assert.Empty(t, res.Unstorable, "no copy of the repeated message is left unacked")
	assert.Equal(t, 1, res.Statements, "the repeat is skipped within the batch's own statement, not isolated as a refused record")
	assert.Equal(t, 4, countRows(t, b.db.Pool, "true"), "one row per message")
	assert.Equal(t, 1, countRows(t, b.db.Pool, "source_seq = 1"))
	assert.Equal(t, int64(4), foldedCount(t, b.db.Pool), "the counters count each stored row once")
}
