package dlq

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev34CutOffIsExportedThroughAnOutage: quarantine_ingest_store_
// errors_total rises only on a batch's retried attempts; 10 seconds into
// an outage the replica cuts itself off, hands batches back without an
// insert and only pings, so the count stops rising, and the critical
// DeadLetterIngestStoreErrors (increase over 5m > 0, for 5m) stopped being
// true before its 5 minutes passed: it never fired for a PostgreSQL that
// stays down. quarantine_ingest_cut_off is 1 for as long as the replica is
// cut off, and the alert fires on it too; it is 0 again once PostgreSQL
// answers.
func TestRev34CutOffIsExportedThroughAnOutage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	down := b.storeBehindARoute(t, "outage-replica")
	r := b.start(t, IngestConfig{BatchSize: 10, Workers: 1, AckWait: 5 * time.Minute}, nil)
	assert.Zero(t, testutil.ToFloat64(r.metrics.CutOff), "exported at 0 from the start")
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	defer admin.Close()

	down.Store(true)
	_, err = admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'outage-replica'")
	require.NoError(t, err)
	for i := range 3 {
		_, err := b.js.Publish(ctx, "dlq.acme.orders.created", fmt.Appendf(nil, `{"n":%d}`, i))
		require.NoError(t, err)
	}
	wait.Until(t, "the replica cut off, and saying so", time.Minute, func() bool {
		return r.cutOff.Load() && testutil.ToFloat64(r.metrics.CutOff) == 1
	})

	down.Store(false)
	b.waitDrained(t)
	require.Equal(t, 3, countRows(t, b.db.Pool, "true"))
	wait.Until(t, "the cut-off gauge back at 0", 30*time.Second, func() bool { return testutil.ToFloat64(r.metrics.CutOff) == 0 })

	rules, err := os.ReadFile("../docs/alerts.yml")
	require.NoError(t, err)
	assert.Contains(t, string(rules), "increase(quarantine_ingest_store_errors_total[5m]) > 0 or max(quarantine_ingest_cut_off) > 0",
		"DeadLetterIngestStoreErrors fires on the cut-off gauge too")
}
