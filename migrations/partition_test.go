package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestPartitioningKeepsRows takes a database at migration 0008 holding dead
// letters of several days (one from before 0008, without a source key), a
// replay request naming one, and counters the old triggers kept, through
// migrations 0015 and 0016 (one linked to another by replay_of and one
// needing reconciliation since 0010): every row is kept with its id in the
// partition of its day, ids go on after the highest, the old row gets a
// source key, replay items know their dead letter's time, replay links and
// the indexes of 0010 are kept, and the counters are exact.
func TestPartitioningKeepsRows(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	conn := db.OwnerAt(t, 8)

	_, err := conn.Exec(ctx, `ALTER TABLE dead_letters DROP CONSTRAINT dead_letters_source_key_check`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `
        INSERT INTO dead_letters (tenant, item_type, subject, msg_id, error_class, dead_lettered_at, payload_sha256, payload_size,
            fingerprint, source_kind, source_stream, source_seq, source_key, delivery, status)
        SELECT 'acme', 'billing.invoice', 'dlq.acme.billing.invoice', 'm-' || i, 'transient',
               now() - (i % 4) * interval '1 day', sha256(''), 0, 'fp' || (i % 3), 'dlq', 'DLQ', i,
               CASE WHEN i = 1 THEN NULL ELSE sha256(convert_to('k' || i, 'UTF8')) END,
               CASE WHEN i = 1 THEN '' ELSE 'DLQ #' || i END,
               CASE WHEN i % 5 = 0 THEN 'discarded' ELSE 'quarantined' END
        FROM generate_series(1, 40) AS i`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `
        INSERT INTO replay_requests (batch, tenant, class, requester_issuer, requester_subject, policy_version, rate, intent_hash, item_count)
        VALUES ('b', 'acme', 'rebuildable', 'iss', 'sub', 'v', 1, sha256(''), 1);
        INSERT INTO replay_items (request_id, dead_letter_id, position, msg_id, subject, headers, payload_sha256)
        SELECT r.id, d.id, 0, d.msg_id, 'app.x', '[]', d.payload_sha256 FROM replay_requests r, dead_letters d WHERE d.msg_id = 'm-7'`)
	require.NoError(t, err)
	var before []int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT array_agg(id ORDER BY id) FROM dead_letters`).Scan(&before))

	// At 0010: a dead letter that came back from a replay of another, and
	// one whose replay waits for a person.
	require.NoError(t, migrations.MigrateTo(ctx, conn, 10))
	_, err = conn.Exec(ctx, `
        UPDATE dead_letters SET replay_of = (SELECT id FROM dead_letters WHERE msg_id = 'm-3'), generation = 1 WHERE msg_id = 'm-9';
        UPDATE dead_letters SET status = 'needs_reconciliation' WHERE msg_id = 'm-11'`)
	require.NoError(t, err)

	_, err = migrations.Migrate(ctx, conn)
	require.NoError(t, err)

	var after []int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT array_agg(id ORDER BY id) FROM dead_letters`).Scan(&after))
	assert.Equal(t, before, after, "every row kept with its id")
	var misplaced, partitions int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE tableoid::regclass::text
            <> quarantine_dead_letter_partition_name((dead_lettered_at AT TIME ZONE 'UTC')::date)) FROM dead_letters`).Scan(&misplaced))
	assert.Zero(t, misplaced, "each row in the partition of its UTC day")
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'dead_letters'::regclass`).Scan(&partitions))
	assert.GreaterOrEqual(t, partitions, 4+7, "the rows' days, and today and the next seven")

	var keyless int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE source_key IS NULL`).Scan(&keyless))
	assert.Zero(t, keyless, "the row from before 0008 has a source key now")

	var next int64
	require.NoError(t, conn.QueryRow(ctx, `
        INSERT INTO dead_letters (tenant, item_type, subject, msg_id, error_class, dead_lettered_at, payload_sha256, payload_size,
            fingerprint, source_kind, source_stream, source_seq, source_key)
        VALUES ('acme', 't', 's', 'new', 'transient', now(), sha256(''), 0, 'f', 'dlq', 'DLQ', 999, sha256('new'))
        RETURNING id`).Scan(&next))
	assert.Equal(t, before[len(before)-1]+1, next, "ids go on after the highest")

	var itemAt, deadAt time.Time
	require.NoError(t, conn.QueryRow(ctx, `SELECT i.dead_lettered_at, d.dead_lettered_at FROM replay_items i
        JOIN dead_letters d ON d.id = i.dead_letter_id`).Scan(&itemAt, &deadAt))
	assert.Equal(t, deadAt, itemAt, "replay items know their dead letter's time")

	var linked, generation int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE d.replay_of = o.id), max(d.generation) FROM dead_letters d
        JOIN dead_letters o ON o.msg_id = 'm-3' WHERE d.msg_id = 'm-9'`).Scan(&linked, &generation))
	assert.Equal(t, 1, linked, "the replay link is kept")
	assert.Equal(t, 1, generation)
	var unresolvedIdx, replayOfIdx bool
	require.NoError(t, conn.QueryRow(ctx, `
        SELECT pg_get_indexdef('dead_letters_unresolved_age_idx'::regclass) LIKE '%needs_reconciliation%',
               to_regclass('dead_letters_replay_of_idx') IS NOT NULL`).Scan(&unresolvedIdx, &replayOfIdx))
	assert.True(t, unresolvedIdx, "needs_reconciliation is unresolved in the partial index")
	assert.True(t, replayOfIdx, "replay chains are found by index")

	var wrong int
	require.NoError(t, conn.QueryRow(ctx, `
        SELECT (SELECT count(*) FROM (
            SELECT tenant, item_type, error_class, status, count(*) FROM dead_letters WHERE msg_id <> 'new' GROUP BY 1, 2, 3, 4
            EXCEPT SELECT tenant, item_type, error_class, status, n FROM dead_letter_counts) c)
        + (SELECT count(*) FROM (
            SELECT tenant, fingerprint, item_type, count(*), count(*) FILTER (WHERE dead_letter_unresolved(status))
            FROM dead_letters WHERE msg_id <> 'new' GROUP BY 1, 2, 3
            EXCEPT SELECT tenant, fingerprint, item_type, n, unresolved FROM dead_letter_groups) g)`).Scan(&wrong))
	assert.Zero(t, wrong, "counters and groups rebuilt exact")
}
