package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRetentionRedeliveryJudgedOnTheDatabaseClock removes a dead letter
// closed two hours ago under a policy that keeps closed ones an hour (the
// shortest it allows), then the DLQ stream delivers its message again to
// an ingester whose clock lags the database's by three hours: to that
// clock the message is not half an hour old, so retention cannot have
// removed it, and the batch would go without looking at the keys
// retention kept (it was stored again, back in the inbox). Retention
// judged on the database's clock, and so does ingest: the message is not
// stored again. A message never stored, as old, is stored as any other.
func TestRetentionRedeliveryJudgedOnTheDatabaseClock(t *testing.T) {
	t.Parallel()
	r := setupRetentionWith(t, "[retention]\nclosed = \"1h\"\nunresolved = \"90d\"\n")
	ctx := context.Background()
	at := time.Now().Add(-2 * time.Hour)
	msg := dlqMessage("SKEW", 1, "orders.refund", "refund-1", at)
	st := dlq.NewStore(r.db.Pool)
	_, err := st.Insert(ctx, []dlq.Record{msg})
	require.NoError(t, err)
	testfactory.RecordsArrived(t, r.db.Pool, msg)
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	d, err := st.BySource(ctx, "SKEW", 1, "")
	require.NoError(t, err)
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusDiscarded, d.ID)
	pass := r.pass(t)
	require.Len(t, pass.Runs, 1)
	require.Empty(t, r.remaining(t, []int64{d.ID}), "closed two hours ago, kept one: removed")

	lagging := dlq.NewStore(r.db.Pool)
	lagging.SetClock(func() time.Time { return time.Now().Add(-3 * time.Hour) })
	res, err := lagging.Insert(ctx, []dlq.Record{msg})
	require.NoError(t, err)
	assert.Empty(t, res.Inserted, "a message retention removed is not stored again, whatever the ingester's clock says")
	var n int
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE source_stream = 'SKEW'`).Scan(&n))
	assert.Zero(t, n)

	fresh := dlqMessage("SKEW", 2, "orders.refund", "refund-2", at.Add(time.Minute))
	res, err = lagging.Insert(ctx, []dlq.Record{fresh, msg})
	require.NoError(t, err)
	assert.Len(t, res.Inserted, 1, "one never stored is stored")
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE source_stream = 'SKEW'`).Scan(&n))
	assert.Equal(t, 1, n)
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	assert.Empty(t, testfactory.CountersDrift(t, r.db.Pool))
}
