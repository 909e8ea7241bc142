package dlq

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevRetention24RareLaneReadsTheTenantHistory: the keeper's batch
// (lockBatch) reads one lane per counter row that has a retention term,
// each `d.tenant = c.tenant AND d.item_type = c.item_type AND ...
// ORDER BY d.dead_lettered_at LIMIT`, the outer row's values unknown to
// the planner: the sibling of the combinations' lanes that round 23 made
// read dead_letters_dims_time_idx. With the table analyzed (a tenant of
// two item types), the lane of the rare combination was estimated at half
// the tenant and read through the tenant-time index from the oldest
// row, testing each: some 15,900 of the tenant's 20,000 other dead letters
// read and dropped to lock the one that is due. A lane runs at every
// pass for every counter row with a term, due or not, so a pass reads the
// tenant's history past the cutoff once per rare combination, inside the
// purge's transaction.
func TestRevRetention24RareLaneReadsTheTenantHistory(t *testing.T) {
	l := newLetters(t)
	ctx := context.Background()
	now := planNow()
	recs := []Record{l.record(letter{subject: "app.acme.payments.capture", itemType: "payments.capture", err: "card declined",
		class: ClassPolicy, at: now.Add(-time.Hour)})}
	for i := range 20_000 {
		recs = append(recs, l.record(letter{err: "timeout", at: now.Add(-2*time.Hour - time.Duration(i)*10*time.Second)}))
	}
	for start := 0; start < len(recs); start += 1000 {
		_, err := l.store.Insert(ctx, recs[start:min(start+1000, len(recs))])
		require.NoError(t, err)
	}
	_, err := FoldCounters(ctx, l.db.Pool)
	require.NoError(t, err)
	_, err = l.db.OwnerPool.Exec(ctx, `ANALYZE dead_letters`)
	require.NoError(t, err)
	// Due: the rare one is past its cutoff (the batch locks it). NotDue:
	// it is not yet, and the lane still runs at every pass.
	// Common: the other combination's lane, all 20,000 due: a batch locks
	// its limit, reading as many, not the lane's every due row to sort
	// them first.
	for _, tc := range []struct {
		name     string
		itemType string
		class    ErrorClass
		cutoff   time.Time
		locked   int
	}{
		{"Due", "payments.capture", ClassPolicy, time.Now().Add(time.Minute), 1},
		{"NotDue", "payments.capture", ClassPolicy, now.Add(-90 * time.Minute), 0},
		{"Common", "orders.refund", ClassPermanent, time.Now().Add(time.Minute), 1000},
	} {
		// The pool's own planning (auto), and a generic plan: the lane's
		// values are the outer row's in both.
		for _, mode := range []string{"auto", "force_generic_plan"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				tx, err := l.db.Pool.Begin(ctx)
				require.NoError(t, err)
				defer tx.Rollback(ctx)
				_, err = tx.Exec(ctx, `SET LOCAL plan_cache_mode = `+mode)
				require.NoError(t, err)
				rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE) `+lockBatch, []string{"acme"}, []string{tc.itemType},
					[]string{string(tc.class)}, []string{string(StatusQuarantined)}, []time.Time{tc.cutoff}, 1000)
				require.NoError(t, err)
				lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
				require.NoError(t, err)
				plan := strings.Join(lines, "\n")
				require.Regexp(t, `LockRows .*rows=`+strconv.Itoa(tc.locked)+` loops=1\)`, plan, "what the batch locks")
				assert.LessOrEqual(t, removedByFilter(plan), 100, "rows read and dropped; plan:\n%s", plan)
				assert.NotContains(t, plan, "Sort", "a lane read whole to be sorted; plan:\n%s", plan)
				for _, m := range regexp.MustCompile(`Index (?:Only )?Scan using (\S+) .*\(actual time=\S+ rows=(\d+) loops`).FindAllStringSubmatch(plan, -1) {
					n, _ := strconv.Atoi(m[2])
					if n > 0 {
						assert.Contains(t, m[1], "item_type", "a lane's rows read through the dims index; plan:\n%s", plan)
					}
				}
			})
		}
	}
}
