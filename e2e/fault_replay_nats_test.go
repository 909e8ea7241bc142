package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// NATS faults during a bulk replay (issue 6): the same 5,000 rebuildable
// dead letters at 500 messages per second as TestBulkReplaySurvivesConsoleKill,
// with the broker failing under the replay workers instead of the console.

// TestBulkReplaySurvivesNATSRestart stops the nats-server process
// (graceful, file storage kept) in the middle of a bulk replay and starts
// it again on the same port and store once the replay has felt the outage
// (an item recorded "unknown", or a claim that found the broker away and
// published nothing). Publishes in flight lose their PubAcks:
// those jobs become "unknown" and are retried
// under the same Nats-Msg-Id, which the target stream's duplicate window
// suppresses when the first publish was stored. The request reaches done,
// the target stream holds each original message id exactly once, no job is
// left failed or unknown, and the audit chain verifies.
func TestBulkReplaySurvivesNATSRestart(t *testing.T) {
	t.Parallel()
	s, js := newReplayStack(t, stackConfig{Env: []string{"REPLAY_LEASE=5s"}})
	ctx := testContext(t, 5*time.Minute)

	l := startLoad(t, s.NATSURL, loadSpec{Tenant: "acme", ItemType: "search.index_update", Count: bulkReplayCount, Workers: 8})
	l.Wait(t, 2*time.Minute)
	waitRows(t, s.DB, l.RunID, bulkReplayCount, 2*time.Minute, s.Console.proc)
	ids := deadLetterIDs(t, s, l.RunID)
	require.Len(t, ids, bulkReplayCount)

	oncall := signInHTTP(t, s.Console.URL, userOncall)
	submitted := time.Now()
	reqID := oncall.bulkReplay(t, ctx, ids, bulkReplayRate, "reindex after the search cluster upgrade (e2e "+l.RunID+")")
	logUnreplayed(t, s.DB, reqID)

	waitPublishedJobs(t, ctx, s.DB, reqID, bulkReplayCount/5, s.Console.proc)
	s.NATS.Stop(t)
	published, _ := replayJobStates(t, ctx, s.DB, reqID)
	require.Less(t, published, bulkReplayCount, "the stop must hit while the replay runs")
	t.Logf("stopped nats-server at %d of %d published, %s after the submit", published, bulkReplayCount, time.Since(submitted).Round(time.Millisecond))
	// The outage lasts until the replay has felt it: a publish in flight
	// at the stop ran out its 5 s PubAck timeout and its item was recorded
	// with the outcome unknown (the audit row says so), or a claim found
	// the broker away and sent nothing (a worker hands nothing to a client
	// that is reconnecting: it would keep it and send it when the broker is
	// back, perhaps past the duplicate window). Then the broker comes back,
	// and those items are sent (again, under their ids).
	waitReplayFeltOutage(t, ctx, s.DB, l.RunID, reqID, s.Console.proc)
	s.NATS.Start(t)
	t.Logf("nats-server back %s after the submit", time.Since(submitted).Round(time.Millisecond))

	waitReplayDone(t, ctx, oncall, reqID, s.Console.proc)
	t.Logf("replay done %s after the submit", time.Since(submitted).Round(time.Millisecond))

	requireBulkReplayedOnce(t, ctx, s.DB, js, l, reqID)
	s.Console.AuditVerify(t)
	s.Console.waitReady(t) // still serving, reconnected
}

// TestBulkReplayOnClusterTwoReplicas runs two console replicas on one
// database (two replay workers each) against a three-node JetStream
// cluster; the target stream has 3 replicas. During a bulk replay of 5,000
// items the node leading the target stream is stopped (a new leader is
// elected; PubAcks in flight are lost), and started again later on its
// store. The replay completes; each original message id is in the target
// stream once; both replicas' workers published items (the jobs are
// shared through PostgreSQL claims, not split per process); the audit
// chain verifies.
func TestBulkReplayOnClusterTwoReplicas(t *testing.T) {
	t.Parallel()
	c := startNATSCluster(t, 3)
	s := newStack(t, stackConfig{NATSURL: c.URLs(), Env: []string{"DLQ_REPLICAS=3", "REPLAY_LEASE=5s"}, Replicas: 2})
	consoles := []*proc{s.Consoles[0].proc, s.Consoles[1].proc}
	ctx := testContext(t, 5*time.Minute)
	_, js := connectNATS(t, c.URLs(), "e2e-replay")
	// Placing three replicas needs every peer online as the meta leader
	// sees it; on a loaded machine a peer's heartbeat can lag for a moment
	// after the cluster was seen whole (CI125: "no suitable peers for
	// placement, peer offline"). Any other refusal fails at once.
	wait.For(t, "stream "+targetStream+" placed on three peers", time.Minute, func() error {
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: targetStream, Subjects: []string{"app.>"}, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute, Replicas: 3,
		})
		if err != nil && strings.Contains(err.Error(), "no suitable peers for placement") {
			return err
		}
		require.NoError(t, err, "create stream %s", targetStream)
		return nil
	})
	info, err := streamInfo(ctx, js, targetStream)
	require.NoError(t, err)
	require.NotNil(t, info.Cluster)
	require.Len(t, info.Cluster.Replicas, 2, "the target stream has a leader and two followers")

	l := startLoad(t, c.URLs(), loadSpec{Tenant: "acme", ItemType: "search.index_update", Count: bulkReplayCount, Workers: 8})
	l.Wait(t, 2*time.Minute)
	waitRows(t, s.DB, l.RunID, bulkReplayCount, 2*time.Minute, consoles...)
	ids := deadLetterIDs(t, s, l.RunID)
	require.Len(t, ids, bulkReplayCount)

	oncall := signInHTTP(t, s.Console.URL, userOncall)
	submitted := time.Now()
	reqID := oncall.bulkReplay(t, ctx, ids, bulkReplayRate, "reindex after the search cluster upgrade (e2e "+l.RunID+")")
	logUnreplayed(t, s.DB, reqID)

	waitPublishedJobs(t, ctx, s.DB, reqID, bulkReplayCount/5, consoles...)
	info, err = streamInfo(ctx, js, targetStream)
	require.NoError(t, err)
	leader := c.Node(t, info.Cluster.Leader)
	leader.Stop(t)
	published, _ := replayJobStates(t, ctx, s.DB, reqID)
	require.Less(t, published, bulkReplayCount, "the node must stop while the replay runs")
	t.Logf("stopped %s (%s leader) at %d of %d published, %s after the submit",
		leader.Name, targetStream, published, bulkReplayCount, time.Since(submitted).Round(time.Millisecond))

	// The replay goes on with two of three nodes (or finishes); then the
	// node comes back on its store.
	during := min(published+bulkReplayCount/5, bulkReplayCount)
	waitPublishedJobs(t, ctx, s.DB, reqID, during, consoles...)
	published, _ = replayJobStates(t, ctx, s.DB, reqID)
	t.Logf("%d published with %s down, %s after the submit", published, leader.Name, time.Since(submitted).Round(time.Millisecond))
	leader.Start(t)
	c.waitMetaLeader(t)

	waitReplayDone(t, ctx, oncall, reqID, consoles...)
	t.Logf("replay done %s after the submit", time.Since(submitted).Round(time.Millisecond))

	requireBulkReplayedOnce(t, ctx, s.DB, js, l, reqID)

	// Both processes' workers published: owners are <host>-<pid>-<n>.
	rows, err := s.DB.Query(ctx, `SELECT actor_subject, count(*) FROM audit_log
		WHERE action = 'replay.item.replayed' AND message_id LIKE $1 || '-%' GROUP BY actor_subject ORDER BY actor_subject`, l.RunID)
	require.NoError(t, err)
	byPid := map[int]int{}
	var owners []string
	for rows.Next() {
		var actor string
		var n int
		require.NoError(t, rows.Scan(&actor, &n))
		owners = append(owners, fmt.Sprintf("%s×%d", actor, n))
		owner, ok := strings.CutPrefix(actor, "replay-worker:")
		require.True(t, ok, "published by %q", actor)
		parts := strings.Split(owner, "-")
		require.GreaterOrEqual(t, len(parts), 3, "owner %q", owner)
		pid, err := strconv.Atoi(parts[len(parts)-2])
		require.NoError(t, err, "owner %q", owner)
		byPid[pid] += n
	}
	require.NoError(t, rows.Err())
	t.Logf("published by %v", owners)
	for _, cons := range s.Consoles {
		assert.Positive(t, byPid[cons.proc.Pid()], "%s (pid %d) published some of the items: %v", cons.proc.name, cons.proc.Pid(), owners)
	}
	assert.Len(t, byPid, len(s.Consoles), "published only by the consoles' workers: %v", owners)
	s.Console.AuditVerify(t)

	// The restarted node caught up: all three target replicas current.
	wait.For(t, "three current "+targetStream+" replicas", time.Minute, whileRunning(func() error {
		info, err := streamInfo(ctx, js, targetStream)
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
			return fmt.Errorf("cluster %+v: %w", info.Cluster, wait.ErrNotYet)
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Offline {
				return fmt.Errorf("replica %s current=%v offline=%v: %w", r.Name, r.Current, r.Offline, wait.ErrNotYet)
			}
		}
		return nil
	}, consoles...))
}

// replayJobStates counts a request's published and failed jobs.
func replayJobStates(t *testing.T, ctx context.Context, db *pgxpool.Pool, reqID int64) (published, failed int) {
	t.Helper()
	require.NoError(t, db.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE state = 'replayed'), count(*) FILTER (WHERE state = 'blocked')
		FROM replay_jobs WHERE request_id = $1`, reqID).Scan(&published, &failed))
	return published, failed
}

// logUnreplayed says, when the test fails, what became of the jobs of
// request reqID that were not replayed (state, why, attempts), so that a
// failure under load explains itself.
func logUnreplayed(t *testing.T, db *pgxpool.Pool, reqID int64) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		rows, err := db.Query(context.Background(), `SELECT state, left(result, 300), attempts, count(*) FROM replay_jobs
            WHERE request_id = $1 AND state <> 'replayed' GROUP BY 1, 2, 3 ORDER BY 4 DESC LIMIT 20`, reqID)
		if err != nil {
			t.Logf("jobs not replayed: %v", err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			var state, result string
			var attempts, n int
			if err := rows.Scan(&state, &result, &attempts, &n); err != nil {
				t.Logf("jobs not replayed: %v", err)
				return
			}
			t.Logf("jobs not replayed: %d %s after %d attempts: %s", n, state, attempts, result)
		}
	})
}

// waitPublishedJobs waits until at least n of a request's jobs are
// published (watched in the database, as the kill test does).
func waitPublishedJobs(t *testing.T, ctx context.Context, db *pgxpool.Pool, reqID int64, n int, watch ...*proc) {
	t.Helper()
	wait.For(t, fmt.Sprintf("%d of the replay published", n), time.Minute, whileRunning(func() error {
		var got int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM replay_jobs WHERE request_id = $1 AND state = 'replayed'`, reqID).Scan(&got); err != nil {
			return err
		}
		if got < n {
			return fmt.Errorf("published %d: %w", got, wait.ErrNotYet)
		}
		return nil
	}, watch...))
}

// waitReplayFeltOutage waits until a replayed item of load runID has been
// recorded with its outcome unknown (its PubAck never came: the audit row
// of that outcome, which stays when the item is sent again), or a job of
// request reqID was left to go later because the broker was away (not
// sent, or its target's window could not be read).
func waitReplayFeltOutage(t *testing.T, ctx context.Context, db *pgxpool.Pool, runID string, reqID int64, watch ...*proc) {
	t.Helper()
	wait.For(t, "an item recorded with its outcome unknown, or not sent", time.Minute, whileRunning(func() error {
		var n int
		if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM audit_log WHERE action = 'replay.item.unknown' AND message_id LIKE $1 || '-%')
            + (SELECT count(*) FROM replay_jobs WHERE request_id = $2 AND state = 'pending'
               AND (result LIKE 'not published (%' OR result LIKE 'could not read the duplicate window%'))`, runID, reqID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("none yet: %w", wait.ErrNotYet)
		}
		return nil
	}, watch...))
}

// waitReplayDone waits until the request page shows the request done.
func waitReplayDone(t *testing.T, ctx context.Context, h *httpSession, reqID int64, watch ...*proc) {
	t.Helper()
	wait.For(t, "the replay done", 2*time.Minute, whileRunning(func() error {
		p, err := h.progress(ctx, reqID)
		if err != nil {
			return err
		}
		if p.Status != "done" {
			return fmt.Errorf("status %s, published %d, pending %d: %w", p.Status, p.Replayed, p.Pending, wait.ErrNotYet)
		}
		return nil
	}, watch...))
}

// requireBulkReplayedOnce checks the end state of a bulk replay of a whole
// load: every job published (none failed, none left unknown or pending),
// the target stream holding each original message id exactly once and
// nothing else, and one published audit event per item.
func requireBulkReplayedOnce(t *testing.T, ctx context.Context, db *pgxpool.Pool, js jetstream.JetStream, l *load, reqID int64) {
	t.Helper()
	states := map[string]int{}
	rows, err := db.Query(ctx, `SELECT state, count(*) FROM replay_jobs WHERE request_id = $1 GROUP BY state`, reqID)
	require.NoError(t, err)
	for rows.Next() {
		var st string
		var n int
		require.NoError(t, rows.Scan(&st, &n))
		states[st] = n
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, map[string]int{"replayed": bulkReplayCount}, states, "every job published, none failed or left unknown")

	msgIDs := make([]string, bulkReplayCount)
	for i := range msgIDs {
		msgIDs[i] = l.MsgID(i)
	}
	requireEachOnceInStream(t, ctx, js, targetStream, msgIDs)
	streamIDs := readStreamIDs(t, ctx, js, targetStream)
	assert.Len(t, streamIDs, bulkReplayCount, "5,000 distinct Nats-Msg-Ids in the target stream")
	var info *jetstream.StreamInfo
	wait.For(t, "stream info", 30*time.Second, func() error {
		var err error
		info, err = streamInfo(ctx, js, targetStream)
		return err
	})
	assert.EqualValues(t, bulkReplayCount, info.State.Msgs, "the target stream holds one message per item")

	var published, distinct, suppressed, unknown, failed int
	require.NoError(t, db.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE action = 'replay.item.replayed'),
		       count(DISTINCT message_id) FILTER (WHERE action = 'replay.item.replayed'),
		       count(*) FILTER (WHERE action = 'replay.item.replayed' AND reason LIKE '%own earlier publish%'),
		       count(*) FILTER (WHERE action = 'replay.item.unknown'),
		       count(*) FILTER (WHERE action = 'replay.item.blocked')
		FROM audit_log WHERE message_id LIKE $1 || '-%'`, l.RunID).Scan(&published, &distinct, &suppressed, &unknown, &failed))
	assert.Equal(t, bulkReplayCount, distinct, "every item has a published audit event")
	assert.Equal(t, bulkReplayCount, published, "one published audit event per item")
	assert.Zero(t, failed, "no item was recorded failed on the way")
	t.Logf("audit: %d replayed (%d answered Duplicate of their own earlier publish), %d outcome unknown and retried, %d blocked",
		published, suppressed, unknown, failed)
}
