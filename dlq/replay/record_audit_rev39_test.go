package replay_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// itemRows counts the replay.item.* audit rows of dead letter id.
func itemRows(t *testing.T, b *replayBundle, id int64) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log
        WHERE action LIKE 'replay.item.%' AND object_id = $1`, strconv.FormatInt(id, 10)).Scan(&n))
	return n
}

// TestRev39KeptOutcomeAuditsThePayloadItPublished: an outcome the lease
// ended before recording is kept, its payload let go, and recorded at the
// next RunOnce. Its audit row names the SHA-256 of the payload published,
// not of no bytes: the audit log cannot be mended, and such outcomes are
// the ones of database incidents, which auditors read.
func TestRev39KeptOutcomeAuditsThePayloadItPublished(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	payload := `{"order":42}`
	id := b.seedItem(t, "search.index_update", "rev39-kept-payload", nil, payload)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Lease: time.Second, RecordTimeout: time.Second, Retry: 20 * time.Millisecond})
	var lock pgx.Tx
	w.AfterPublish(func([]int64) bool {
		lock = b.lockJob(t, req.ID)
		return true
	})
	_, err := w.RunOnce(ctx)
	require.Error(t, err, "the record gave up at the lease's end and kept the outcome")
	w.AfterPublish(nil)
	require.NoError(t, lock.Rollback(ctx))
	wait.Until(t, "the kept outcome recorded", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		s := b.job(t, req.ID, id).State
		return s != "claimed" && s != "unknown" && s != "pending"
	})
	require.Equal(t, "replayed", b.job(t, req.ID, id).State)
	var got string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT coalesce(after->>'payload_sha256', '') FROM audit_log
        WHERE action = 'replay.item.replayed' AND object_id = $1`, strconv.FormatInt(id, 10)).Scan(&got))
	want := sha256.Sum256([]byte(payload))
	assert.Equal(t, hex.EncodeToString(want[:]), got)
}

// TestRev39RecordRetriedAfterAReleaseAuditsNothing: a job left unknown (a
// lost PubAck) and sent back to wait unsent by a later claim (its lease
// running out) has nothing new to audit. When that record's first attempt
// fails and a second one records it, that still holds: the first attempt
// had already moved the job to unknown in memory, and the second took the
// move for news and wrote a replay.item.unknown row.
func TestRev39RecordRetriedAfterAReleaseAuditsNothing(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "rev39-release-retried", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{RecordTimeout: 300 * time.Millisecond, Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "unknown", b.job(t, req.ID, id).State)
	before := itemRows(t, b, id)

	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, req.ID)
	require.NoError(t, err)
	jobs, err := w.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	w.Judge(ctx, jobs)
	w.Publish(ctx, jobs, time.Now().Add(-time.Second)) // past its time to publish: released unsent

	lock := b.lockJob(t, req.ID)
	failed := 0
	w.RecordFailed(func(int, error) {
		if failed++; failed == 1 {
			require.NoError(t, lock.Rollback(ctx))
		}
	})
	require.NoError(t, w.Record(ctx, jobs))
	require.Equal(t, 1, failed, "the first attempt failed, the second recorded")
	assert.Equal(t, "unknown", b.job(t, req.ID, id).State)
	assert.Equal(t, before, itemRows(t, b, id), "a release audits nothing, retried or not")
}
