package replay_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestSubmitAndDiscardOfOverlappingDeadLettersNeverDeadlock runs, round
// after round, two submits of batches of two requests each (two item
// types), two discards that each take dead letters of both batches, in
// descending id order, and a discard of dead letters of both types in no
// batch (the same counter rows), all at once. Every submit and discard either
// succeeds or is refused (a conflict, or a draft that changed); none dies
// as a deadlock victim. Afterwards each dead letter is either discarded or
// held by one open request, never both nor neither, and the depth counters
// equal the table's counts.
func TestSubmitAndDiscardOfOverlappingDeadLettersNeverDeadlock(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const rounds = 25
	var submitted, discarded, refused int
	var all []int64
	for r := range rounds {
		idx, _ := b.seedN(t, 4, "search.index_update", fmt.Sprintf("dl-idx-%d", r))
		ana, _ := b.seedN(t, 4, "analytics.event", fmt.Sprintf("dl-ana-%d", r))
		all = append(append(all, idx...), ana...)
		batchA, _ := b.draft(t, oncall, idx[0], idx[1], ana[0], ana[1])
		batchB, _ := b.draft(t, oncall, idx[2], idx[3], ana[2], ana[3])
		spare, _ := b.seedN(t, 1, "search.index_update", fmt.Sprintf("dl-spare-idx-%d", r))
		spareAna, _ := b.seedN(t, 1, "analytics.event", fmt.Sprintf("dl-spare-ana-%d", r))
		all = append(append(all, spare...), spareAna...)
		// Two discards name dead letters of both batches, highest id
		// first; the third, of no batch, takes the same counter rows.
		discards := [][]int64{{ana[3], ana[0], idx[1]}, {ana[1], idx[3], idx[2]}, {spareAna[0], spare[0]}}

		start := make(chan struct{})
		errs := make([]error, 2+len(discards))
		var wg sync.WaitGroup
		for i, batch := range []string{batchA, batchB} {
			wg.Go(func() {
				<-start
				_, errs[i] = b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "indexer fixed"}, quarantine.RequestMeta{})
			})
		}
		for i, ids := range discards {
			wg.Go(func() {
				<-start
				_, errs[2+i] = b.store.Close(ctx, dlq.CloseInput{IDs: ids, To: dlq.StatusDiscarded, Reason: "duplicate of an earlier event", All: true},
					approver1, quarantine.RequestMeta{})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				require.Failf(t, "a database error", "round %d, operation %d: %v (SQLSTATE %s)", r, i, err, pgErr.Code)
			}
			switch code := quarantine.ErrorCode(err); {
			case err == nil && i < 2:
				submitted++
			case err == nil:
				discarded++
			case code == quarantine.ECONFLICT || code == quarantine.EINVALID:
				refused++
			default:
				require.Failf(t, "an unexpected error", "round %d, operation %d: %v", r, i, err)
			}
		}
	}
	t.Logf("%d rounds: %d submits and %d discards went through, %d refused", rounds, submitted, discarded, refused)
	require.Positive(t, submitted+discarded, "something went through")

	rows, err := b.db.Pool.Query(ctx, `
		SELECT d.id, d.status, count(i.request_id) FILTER (WHERE r.status IN ('pending_approval', 'approved'))
		FROM dead_letters d
		LEFT JOIN replay_items i ON i.dead_letter_id = d.id AND i.held
		LEFT JOIN replay_requests r ON r.id = i.request_id
		WHERE d.id = ANY($1) GROUP BY d.id, d.status`, all)
	require.NoError(t, err)
	seen := 0
	for rows.Next() {
		var id int64
		var status string
		var held int
		require.NoError(t, rows.Scan(&id, &status, &held))
		seen++
		switch status {
		case string(dlq.StatusDiscarded), string(dlq.StatusQuarantined):
			assert.Zerof(t, held, "dead letter %d is %s and held by %d open requests", id, status, held)
		case string(dlq.StatusReplayRequested):
			assert.Equalf(t, 1, held, "dead letter %d is requested and held by %d open requests", id, held)
		default:
			t.Errorf("dead letter %d is %s", id, status)
		}
	}
	require.NoError(t, rows.Err())
	require.Equal(t, len(all), seen)

	_, err = dlq.FoldCounters(ctx, b.db.Pool)
	require.NoError(t, err)
	count := func(q string) map[string]int64 {
		rows, err := b.db.Pool.Query(ctx, q)
		require.NoError(t, err)
		out := map[string]int64{}
		var k string
		var n int64
		for rows.Next() {
			require.NoError(t, rows.Scan(&k, &n))
			out[k] = n
		}
		require.NoError(t, rows.Err())
		return out
	}
	table := count(`SELECT concat_ws('/', tenant, item_type, error_class, status), count(*) FROM dead_letters GROUP BY 1`)
	counters := count(`SELECT concat_ws('/', tenant, item_type, error_class, status), n FROM dead_letter_counts WHERE n <> 0`)
	assert.Equal(t, table, counters, "the depth counters are exact")
	assert.NotEmpty(t, table)
}
