package replay_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// loggedWorker is a worker of the test's requests, as b.worker, whose
// log is kept in logged.
func (b *replayBundle) loggedWorker(t *testing.T, cfg replay.WorkerConfig, logged *logs.Buffer) *replay.Worker {
	t.Helper()
	cfg.Poll, cfg.AckTimeout = 20*time.Millisecond, time.Minute
	return replay.NewWorker(b.replays, b.js, b.auth, nil, cfg, slog.New(slog.NewTextHandler(logged, nil)))
}

// lockJob holds the row of request's job locked (a database that answers
// nothing about it) until the test rolls the transaction back.
func (b *replayBundle) lockJob(t *testing.T, request int64) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM replay_jobs WHERE request_id = $1 FOR UPDATE`, request)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	return tx
}

// logLine is the line of logged that holds msg ("" when none does).
func logLine(logged *logs.Buffer, msg string) string {
	for line := range strings.Lines(logged.String()) {
		if strings.Contains(line, msg) {
			return line
		}
	}
	return ""
}

// TestStoppedWorkerLogsThePubAckItCouldNotRecord: a worker told to stop
// (SIGTERM) while the database does not take the record of a publish the
// broker stored and answered records for as long as the lease lasts, makes
// one last try as it stops, and then logs the outcome it could not
// record, at error level, with the PubAck's stream and sequence and the
// item's tenant, message id and correlation id: the next claim knows only
// that the job was published, and on-call reconciles from that line.
func TestStoppedWorkerLogsThePubAckItCouldNotRecord(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "stopped-unrecorded"
	id := b.seedItem(t, "search.index_update", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	var logged logs.Buffer
	w := b.loggedWorker(t, replay.WorkerConfig{Lease: time.Second, RecordTimeout: 200 * time.Millisecond}, &logged)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var lock pgx.Tx
	w.AfterPublish(func([]int64) bool {
		lock = b.lockJob(t, req.ID)
		stop() // the worker is told to stop as it records
		return true
	})
	done := make(chan struct{})
	go func() { w.Run(runCtx); close(done) }()
	wait.Until(t, "the worker stopped", time.Minute, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})

	published := b.published(t)[msgID]
	require.NotNil(t, published, "the broker stored the publish")
	line := logLine(&logged, "replay outcome not recorded: the worker stopped first")
	require.NotEmpty(t, line, "the log: %s", logged.String())
	for _, want := range []string{"level=ERROR", "stream=APP", fmt.Sprintf("seq=%d", published.Sequence), "state=replayed",
		"tenant=acme", "msg_id=" + msgID, "correlation_id=corr-" + msgID} {
		assert.Contains(t, line, want)
	}
	assert.Equal(t, "claimed", b.job(t, req.ID, id).State, "nothing was recorded")
	require.NoError(t, lock.Rollback(ctx))
}

// TestKeptOutcomeTakenOverIsLogged: a worker that kept a PubAck it could
// not record in its lease finds, when the database answers again, that
// another worker took the job over (its lease had ended, and a claim moved
// its fence). The fence refuses the kept outcome: that is its end, logged
// with the PubAck's stream and sequence; the other worker's retry, inside
// the duplicate window, found the broker's copy and the item is replayed
// once. The first worker then claims as before.
func TestKeptOutcomeTakenOverIsLogged(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "kept-taken-over"
	id := b.seedItem(t, "search.index_update", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	var logged logs.Buffer
	w := b.loggedWorker(t, replay.WorkerConfig{Lease: time.Second, RecordTimeout: time.Second}, &logged)
	var lock pgx.Tx
	w.AfterPublish(func([]int64) bool {
		lock = b.lockJob(t, req.ID)
		return true
	})
	_, err := w.RunOnce(ctx)
	require.Error(t, err, "the lease ended before the record")
	w.AfterPublish(nil)
	require.NoError(t, lock.Rollback(ctx))
	published := b.published(t)[msgID]
	require.NotNil(t, published)
	assert.Contains(t, logLine(&logged, "replay outcomes not recorded in the lease"), fmt.Sprintf("pub_acks=APP:%d", published.Sequence),
		"the log names what the broker answered")

	other := b.worker(t, replay.WorkerConfig{Owner: "other", Retry: 20 * time.Millisecond})
	wait.Until(t, "the other worker settled the job", time.Minute, func() bool {
		_, err := other.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, req.ID, id).State != "claimed"
	})
	j := b.job(t, req.ID, id)
	require.Equal(t, "replayed", j.State, j.Result)
	require.Equal(t, 2, j.Attempts, "the other worker claimed it")

	_, err = w.RunOnce(ctx)
	require.NoError(t, err, "the kept outcome ends when the fence refuses it; the worker goes on")
	line := logLine(&logged, "replay outcome not recorded: the job is no longer this worker's")
	require.NotEmpty(t, line, "the log: %s", logged.String())
	for _, want := range []string{"stream=APP", fmt.Sprintf("seq=%d", published.Sequence), "msg_id=" + msgID} {
		assert.Contains(t, line, want)
	}
	assert.Equal(t, 1, b.publishedAs(t, msgID), "stored once")
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(logged.String(), "the job is no longer this worker's"), "nothing kept any more")
}

// TestKeptOutcomeLetGoAfterLastingFailures (review rev-fixes3): a worker
// that kept an outcome it could not record claimed nothing while recording
// it failed, and renewed its lease, for ever: a failure that lasts with
// PostgreSQL answering (here the job's row locked for good) stopped the
// worker and held the job from every other. After KeptTries failed tries
// it lets the outcome go, logging what the broker answered, and claims
// again. (A database that does not answer, or a lock that times the
// record out, is tried for as long as it lasts: nothing else could be
// claimed meanwhile.)
func TestKeptOutcomeLetGoAfterLastingFailures(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "kept-let-go"
	id := b.seedItem(t, "search.index_update", msgID, nil, "{}")
	b.request(t, []int64{id}, replay.SubmitInput{})
	var logged logs.Buffer
	// RecordTimeout leaves the refusal time to come back on a loaded
	// machine: a try that times out is one of a database that does not
	// answer, which the worker tries for as long as it lasts (CI11: with
	// 200 ms, both tries timed out and nothing was let go).
	w := b.loggedWorker(t, replay.WorkerConfig{Lease: 3 * time.Second, RecordTimeout: time.Second, KeptTries: 2}, &logged)
	// The ledger refuses the record from the publish on, as a constraint
	// the data breaks would, with PostgreSQL answering.
	w.AfterPublish(func([]int64) bool {
		for _, sql := range []string{
			`CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`,
			`CREATE TRIGGER test_refuse BEFORE INSERT ON replay_ledger FOR EACH ROW EXECUTE FUNCTION test_refuse()`,
		} {
			_, err := b.db.OwnerPool.Exec(ctx, sql)
			require.NoError(t, err, sql)
		}
		return true
	})
	_, err := w.RunOnce(ctx)
	require.Error(t, err, "the lease ended before the record")
	w.AfterPublish(nil)
	published := b.published(t)[msgID]
	require.NotNil(t, published, "the broker stored the publish")

	for try := 1; try <= 2; try++ {
		_, err := w.RunOnce(ctx)
		require.Error(t, err, "try %d of the kept outcome", try)
	}
	line := logLine(&logged, "replay outcome not recorded: recording failed 2 times")
	require.NotEmpty(t, line, "the log: %s", logged.String())
	for _, want := range []string{"level=ERROR", "stream=APP", fmt.Sprintf("seq=%d", published.Sequence), "msg_id=" + msgID} {
		assert.Contains(t, line, want)
	}
	_, err = w.RunOnce(ctx)
	assert.NoError(t, err, "the worker claims again")
}
