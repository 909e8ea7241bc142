package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestLedgerReadFindsIdentityByItemKeys checks the plan of the ledger read
// a dedupe or same_operation claim and its publish gate make for each
// job: the other jobs of the job's message id or operation id are found
// through the items' key indexes (migration 0026), right after a submit
// (fresh rows, no statistics) and after an analyse. It must not reach
// dead_letters: that was one probe of every partition's index per job and
// identity, and made a dedupe replay of a 60-day backlog a third as fast
// as a rebuildable one (docs/BENCHMARKS.md).
func TestLedgerReadFindsIdentityByItemKeys(t *testing.T) {
	t.Parallel()
	rb, _, _, _ := benchReplayRequest(t, 5_000)
	ctx := context.Background()
	var ids []int64
	require.NoError(t, rb.db.Pool.QueryRow(ctx, `SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM replay_jobs ORDER BY id LIMIT 2048) j`).Scan(&ids))
	require.Len(t, ids, 2048)
	tenants, msgIDs, opIDs, subjects := make([]string, len(ids)), make([]string, len(ids)), make([]string, len(ids)), make([]string, len(ids))
	for i := range ids {
		tenants[i], msgIDs[i], opIDs[i], subjects[i] = "acme", fmt.Sprintf("doc-%d", i), fmt.Sprintf("op-%d", i), "app.acme.search.index_update"
	}
	readsItemsByKey := func(t *testing.T) {
		for _, mode := range []string{"values", "prepared", "generic"} {
			plan := explain(t, rb, replay.ClaimTx, mode, "ledger", replay.LedgerOf, "bigint[], text[], text[], text[], bigint[], bigint[], text[]", ids, tenants, msgIDs, opIDs,
				[]int64{ids[0]}, []int64{1}, subjects) // and a job's origin, as readOrigins reads them
			require.Contains(t, plan, "replay_items_msg_key_idx", "%s:\n%s", mode, plan)
			require.Contains(t, plan, "replay_items_operation_key_idx", "%s:\n%s", mode, plan)
			require.NotContains(t, plan, "dead_letters", "%s:\n%s", mode, plan)
			require.NotContains(t, plan, "Seq Scan on replay_items", "%s:\n%s", mode, plan)
		}
	}
	t.Run("Fresh", readsItemsByKey)
	_, err := rb.db.OwnerPool.Exec(ctx, "ANALYZE replay_jobs, replay_items")
	require.NoError(t, err)
	t.Run("Analyzed", readsItemsByKey)
}
