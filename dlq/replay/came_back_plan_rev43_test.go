package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev43CameBackProbesReturnsByIndex reads, on a request of 20,000
// replayed items, 200 of which came back, which did (the request page's
// read) and how many (the replays list's): each item sent probes
// dead_letters_replay_of_idx, in the partitions from a day before its dead
// letter's on (run-time pruning, as the replay chain walks down); no
// partition that holds rows is read whole. The page reads the first
// 10,000 items only (CameBackItemsMax), and the list counts requests of
// up to 1,000 replayed items: each read took 0.1 to 0.4 s on a test
// machine for 20,000 items (9 partitions, other tests running), each item
// probing each partition from its dead letter's day on. (EXPLAIN ANALYZE,
// values planned as the pool sends them; the figures are logged, not
// asserted.)
func TestRev43CameBackProbesReturnsByIndex(t *testing.T) {
	t.Parallel()
	rb, id, _, _ := benchReplayRequest(t, 20_000)
	ctx := context.Background()
	_, err := rb.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed', handed_at = now(), first_published_at = now() WHERE request_id = $1`, id)
	require.NoError(t, err)
	// 200 replays came back: each a dead letter of its own, linked to the
	// one it was replayed from.
	var recs []dlq.Record
	for i := 0; i < 20_000; i += 100 {
		recs = append(recs, dlq.ParseDLQ("dlq", dlq.Received{
			Subject: "dlq.acme.search.index_update",
			Header: map[string][]string{
				dlq.HeaderOriginalSubject: {fmt.Sprintf("app.acme.search.index_update.%d", i%50)},
				dlq.HeaderOriginalMsgID:   {fmt.Sprintf("doc-%d", i)},
			},
			Data: []byte("p"), Stream: "DLQ", Seq: uint64(100_000 + i), Time: time.Now(),
		}))
	}
	_, err = rb.store.Insert(ctx, recs)
	require.NoError(t, err)
	_, err = rb.db.OwnerPool.Exec(ctx, `UPDATE dead_letters c SET replay_of = d.id, generation = 1 FROM dead_letters d
        WHERE c.source_seq >= 100000 AND d.source_seq < 100000 AND d.msg_id = c.msg_id`)
	require.NoError(t, err)
	_, err = rb.db.OwnerPool.Exec(ctx, "ANALYZE dead_letters, replay_jobs, replay_items")
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		sql  string
		args []any
		rows string
	}{
		{"Page", replay.SelectCameBack, []any{id, 20_000, replay.CameBackItemsMax}, "rows=100 loops=1"}, // of the first 10,000 items
		{"List", replay.SelectCameBackCounts, []any{[]int64{id}}, "rows=1 loops=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			rows, err := rb.db.Pool.Query(ctx, `EXPLAIN (ANALYZE) `+tc.sql, append([]any{pgx.QueryExecModeSimpleProtocol}, tc.args...)...)
			require.NoError(t, err)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			took := time.Since(start)
			plan := strings.Join(lines, "\n")
			t.Logf("%s on 20,000 replayed items, 200 back: %s\n%s", tc.name, took, plan)
			assert.Contains(t, plan, tc.rows, plan)
			assert.Contains(t, plan, "_replay_of_idx on dead_letters_p", "the returns found by replay_of (dead_letters_replay_of_idx, on each partition)")
			for i, l := range lines {
				// An empty partition (those made ahead) is planned as a
				// sequential scan, of nothing; one that holds rows is not.
				if strings.Contains(l, "Seq Scan on dead_letters") && i+2 < len(lines) &&
					strings.Contains(lines[i+1]+lines[i+2], "Rows Removed by Filter") {
					t.Errorf("a partition read whole: %s\n%s", l, plan)
				}
			}
		})
	}
}

// TestRev43ListCountsReturnsOfRequestsUpToAThousandItems: the replays list
// counts the returns of a request of at most 1,000 items counted replayed
// (a page lists 50, each item a probe of every newer partition); of a
// bigger one it says nothing, and its own page counts them.
func TestRev43ListCountsReturnsOfRequestsUpToAThousandItems(t *testing.T) {
	t.Parallel()
	rb, id, _, _ := benchReplayRequest(t, 1_001)
	ctx := context.Background()
	_, err := rb.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed', handed_at = now(), first_published_at = now() WHERE request_id = $1`, id)
	require.NoError(t, err)
	back := dlq.ParseDLQ("dlq", dlq.Received{
		Subject: "dlq.acme.search.index_update",
		Header: map[string][]string{
			dlq.HeaderOriginalSubject: {"app.acme.search.index_update.0"},
			dlq.HeaderOriginalMsgID:   {"doc-0"},
		},
		Data: []byte("p"), Stream: "DLQ", Seq: 100_000, Time: time.Now(),
	})
	_, err = rb.store.Insert(ctx, []dlq.Record{back})
	require.NoError(t, err)
	_, err = rb.db.OwnerPool.Exec(ctx, `UPDATE dead_letters c SET replay_of = d.id, generation = 1 FROM dead_letters d
        WHERE c.source_seq = 100000 AND d.source_seq < 100000 AND d.msg_id = c.msg_id`)
	require.NoError(t, err)
	listed := func() int {
		t.Helper()
		reqs, _, err := rb.replays.List(ctx, replay.ListFilter{Tenants: []string{"acme"}, Viewer: oncall, Limit: 50})
		require.NoError(t, err)
		require.Len(t, reqs, 1)
		return reqs[0].CameBack
	}
	assert.Zero(t, listed(), "1,001 items counted replayed: the list probes none")

	_, err = rb.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET state = 'blocked' WHERE request_id = $1
        AND dead_letter_id = (SELECT max(dead_letter_id) FROM replay_jobs WHERE request_id = $1)`, id)
	require.NoError(t, err)
	assert.Equal(t, 1, listed(), "1,000 items counted replayed: the list counts their returns")
}
