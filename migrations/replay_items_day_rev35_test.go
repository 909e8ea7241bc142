package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestRev35DayBusyCheckReadsOnlyItsDay: quarantine_dead_letter_partition_busy
// (whether an open replay request names a dead letter of a day) read every
// replay item ever made, as replay_items had no index by dead_lettered_at
// alone. The keeper asks it three times per day it empties, the last
// under the day's ACCESS EXCLUSIVE lock, during which every read across
// days waits: with millions of items half a second a time. Migration 0071
// indexes the items by day: with 100,000 items of other days the check's
// scan of replay_items touched some 385 buffers without it (a whole index
// read), 2 with.
func TestRev35DayBusyCheckReadsOnlyItsDay(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, db.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	// Items of 100 closed requests on 100 other days (their dead letters
	// left out: the foreign keys are not what is measured).
	_, err = admin.Exec(ctx, `SET session_replication_role = replica`)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `INSERT INTO replay_requests (batch, tenant, class, status, requester_issuer, requester_subject, policy_version, rate, intent_hash, item_count)
        SELECT 'b' || g, 'acme', 'rebuildable', 'done', 'https://idp.example', 'sub-jane', 'v1', 1, '\x00', 1000 FROM generate_series(1, 100) g`)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `INSERT INTO replay_items (request_id, dead_letter_id, position, msg_id, subject, headers, payload_sha256, dead_lettered_at)
        SELECT 1 + g % 100, g, 0, 'm' || g, 'app.acme.x', '{}', '\x00', timestamptz '2026-01-01 12:00Z' + (g % 100) * interval '1 day'
        FROM generate_series(1, 100000) g`)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, `ANALYZE replay_items, replay_requests`)
	require.NoError(t, err)

	// What the check reads of replay_items: the buffers the plan's nodes
	// on that table touched, as the function plans its body (a generic
	// plan of its parameter). The function itself is not inlined (it sets
	// its search_path) and plans its body at every call, whose catalog
	// reads vary with the session's caches, so its first question is asked
	// here as it asks it.
	var busy bool
	require.NoError(t, admin.QueryRow(ctx, `SELECT quarantine_dead_letter_partition_busy(date '2026-06-01')`).Scan(&busy))
	assert.False(t, busy)
	for _, q := range []string{`SET plan_cache_mode = force_generic_plan`, `PREPARE day_busy(date) AS
        SELECT EXISTS (SELECT 1 FROM replay_items i JOIN replay_requests r ON r.id = i.request_id
            WHERE (i.held OR r.status NOT IN ('done', 'done_with_problems', 'rejected', 'cancelled', 'void'))
              AND i.dead_lettered_at >= $1::timestamp AT TIME ZONE 'UTC' AND i.dead_lettered_at < ($1 + 1)::timestamp AT TIME ZONE 'UTC')`} {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err)
	}
	var plan []struct{ Plan planNode }
	require.NoError(t, admin.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE day_busy(date '2026-06-01')`).Scan(&plan))
	require.Len(t, plan, 1)
	touched := plan[0].Plan.buffersOn("replay_items")
	assert.Less(t, touched, int64(50), "the day's check touched %d buffers of replay_items: it reads the items of other days", touched)
}

// planNode is a node of EXPLAIN's JSON plan, with the nodes under it.
type planNode struct {
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Hit      int64      `json:"Shared Hit Blocks"`
	Read     int64      `json:"Shared Read Blocks"`
	Plans    []planNode `json:"Plans"`
}

// buffersOn sums the buffers the nodes scanning table touched (their own
// counts: a node's include its children's).
func (n planNode) buffersOn(table string) int64 {
	var sum, children int64
	for _, c := range n.Plans {
		sum += c.buffersOn(table)
		children += c.Hit + c.Read
	}
	if n.Relation == table {
		sum += n.Hit + n.Read - children
	}
	return sum
}
