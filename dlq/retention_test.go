package dlq_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// retentionPolicy is the shipped replay rules with a [retention] section:
// closed dead letters 30 days and unresolved ones 90 (the defaults), and
// globex's email item types' closed ones a week; analytics events replay
// with dedupe.
const retentionPolicy = `
[[rule]]
item_type = "search.*"
class = "rebuildable"

[[rule]]
item_type = "email.*"
class = "same_operation"

[[rule]]
item_type = "analytics.*"
class = "dedupe"

[retention]
closed = "30d"
unresolved = "90d"

[[retention.rule]]
tenant = "globex"
item_type = "email.*"
closed = "7d"
`

// retention is a fresh database with dead letters, a replay service under
// retentionPolicy and a keeper applying its retention, signing checkpoints
// with signer.
type retention struct {
	db      *testdb.DB
	replays *replay.Service
	keeper  *dlq.Keeper
	signer  *audit.Signer
	today   time.Time
}

func setupRetention(t *testing.T) *retention {
	t.Helper()
	return setupRetentionWith(t, retentionPolicy)
}

// setupRetentionWith is setupRetention under the policy table policy.
func setupRetentionWith(t *testing.T, policy string) *retention {
	t.Helper()
	r := &retention{db: testdb.New(t), today: dlq.Day(time.Now())}
	table, err := replaypolicy.Parse("retention.toml", []byte(policy))
	require.NoError(t, err)
	subjects, err := replay.ParseSubjectAllowlist(testfactory.ReplaySubjects)
	require.NoError(t, err)
	r.replays = replay.New(r.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return table }, Subjects: subjects})
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	r.signer = audit.NewSigner(priv)
	r.keeper = r.keeperWith(app.RetentionOf(table.Retention()), dlq.KeeperConfig{})
	return r
}

// keeperWith is a keeper on r's database under policy, signing its
// checkpoints with r's signer, its other settings from cfg.
func (r *retention) keeperWith(policy dlq.RetentionPolicy, cfg dlq.KeeperConfig) *dlq.Keeper {
	cfg.Policy = func() dlq.RetentionPolicy { return policy }
	cfg.Checkpoint = func(ctx context.Context, tx pgx.Tx, reason string) error {
		_, err := audit.Record(ctx, tx, r.signer, reason)
		return err
	}
	return dlq.NewKeeper(dlq.NewStore(r.db.Pool), cfg, nil, quiet)
}

// daysAgo is noon UTC, n days before today.
func (r *retention) daysAgo(n int) time.Time { return r.today.AddDate(0, 0, -n).Add(12 * time.Hour) }

// letters stores n dead letters of tenant and item type dead-lettered at
// (a second apart), then gives them status (quarantined: as they are).
func (r *retention) letters(t *testing.T, n int, tenant, itemType string, at time.Time, status dlq.Status) []int64 {
	t.Helper()
	ls := make([]testfactory.Letter, n)
	for i := range ls {
		ls[i] = testfactory.Letter{Tenant: tenant, ItemType: itemType, At: at.Add(time.Duration(i) * time.Second),
			OperationID: fmt.Sprintf("op-%s-%d-%d", tenant, at.Unix(), i)}
	}
	ids := testfactory.DeadLetters(t, r.db.Pool, ls...)
	if status != dlq.StatusQuarantined {
		testfactory.SetStatus(t, r.db.Pool, status, ids...)
	}
	return ids
}

// pass runs the keeper once (it must not be skipped) and folds.
func (r *retention) pass(t *testing.T) dlq.KeeperPass {
	t.Helper()
	pass, err := r.keeper.Pass(context.Background())
	require.NoError(t, err)
	require.False(t, pass.Skipped)
	return pass
}

// remaining are the ids of ids still stored.
func (r *retention) remaining(t *testing.T, ids []int64) []int64 {
	t.Helper()
	rows, err := r.db.Pool.Query(context.Background(), `SELECT id FROM dead_letters WHERE id = ANY($1) ORDER BY id`, ids)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return out
}

// purgeRows are the retention runs' audit entries, oldest first.
func (r *retention) purgeRows(t *testing.T) []audit.Entry {
	t.Helper()
	page, err := audit.List(context.Background(), r.db.Pool, audit.Filter{Action: dlq.ActionPurge, Limit: audit.MaxLimit})
	require.NoError(t, err)
	slices.Reverse(page.Entries)
	return page.Entries
}

// verify checks the whole audit chain and its checkpoints.
func (r *retention) verify(t *testing.T) audit.Result {
	t.Helper()
	res, err := audit.Verify(context.Background(), r.db.Pool, audit.VerifyOptions{Keys: audit.NewKeySet(r.signer.PublicKey())})
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	return res
}

// TestRetentionPurgesAndAudits stores dead letters of four days and checks
// what a keeper pass removes under the policy: a day past every period
// whole (its partition emptied, then dropped), the closed dead letters of a
// day past 30 days in a batch of rows, globex's email dead letters past a
// week by their own rule, nothing younger; each run writes one audit row
// (what went, of which tenants and statuses, the time range) and signs a
// checkpoint with it, the counters follow, the chain verifies, and a
// second pass removes nothing.
func TestRetentionPurgesAndAudits(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	oldDay := append(r.letters(t, 5, "acme", "orders.refund", r.daysAgo(100), dlq.StatusQuarantined),
		r.letters(t, 5, "acme", "orders.refund", r.daysAgo(100), dlq.StatusDiscarded)...)
	closed50 := r.letters(t, 4, "acme", "orders.refund", r.daysAgo(50), dlq.StatusDiscarded)
	open50 := r.letters(t, 3, "acme", "orders.refund", r.daysAgo(50), dlq.StatusQuarantined)
	resolved10 := r.letters(t, 3, "acme", "email.send", r.daysAgo(10), dlq.StatusResolved)
	globexMail10 := r.letters(t, 2, "globex", "email.send", r.daysAgo(10), dlq.StatusDiscarded)
	today := r.letters(t, 3, "acme", "orders.refund", time.Now().Add(-time.Minute), dlq.StatusQuarantined)
	oldPartition := dlq.PartitionName(r.daysAgo(100))
	require.Contains(t, partitionNames(t, r.db), oldPartition)
	before := r.verify(t)

	pass := r.pass(t)
	require.Len(t, pass.Runs, 2, "one run empties the old day, one deletes rows")
	day, rows := pass.Runs[0], pass.Runs[1]
	assert.Equal(t, oldPartition, day.Partition)
	assert.Equal(t, int64(10), day.Rows)
	assert.Equal(t, map[string]map[dlq.Status]int64{"acme": {dlq.StatusQuarantined: 5, dlq.StatusDiscarded: 5}}, day.By)
	assert.Empty(t, rows.Partition)
	assert.Equal(t, int64(6), rows.Rows)
	assert.Equal(t, map[string]map[dlq.Status]int64{"acme": {dlq.StatusDiscarded: 4}, "globex": {dlq.StatusDiscarded: 2}}, rows.By)
	assert.GreaterOrEqual(t, pass.Dropped, 1, "the emptied day's partition is dropped")
	assert.NotContains(t, partitionNames(t, r.db), oldPartition)

	all := slices.Concat(oldDay, closed50, open50, resolved10, globexMail10, today)
	assert.Equal(t, slices.Concat(open50, resolved10, today), r.remaining(t, all), "what the policy keeps, and only that")
	_, err := dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	assert.Empty(t, testfactory.CountersDrift(t, r.db.Pool), "the counters follow what went")

	entries := r.purgeRows(t)
	require.Len(t, entries, 2, "one audit row per run")
	var after struct {
		Rows      int64     `json:"rows"`
		From      time.Time `json:"from"`
		To        time.Time `json:"to"`
		Partition string    `json:"partition"`
		By        []struct {
			Tenant string `json:"tenant"`
			Status string `json:"status"`
			N      int64  `json:"n"`
		} `json:"by"`
	}
	require.NoError(t, json.Unmarshal(entries[0].After, &after))
	assert.Equal(t, int64(10), after.Rows)
	assert.Equal(t, oldPartition, after.Partition)
	assert.True(t, after.From.Equal(r.daysAgo(100)) && after.To.Equal(r.daysAgo(100).Add(4*time.Second)), "the time range: %s to %s", after.From, after.To)
	assert.Equal(t, oldPartition, entries[0].ObjectID)
	require.NoError(t, json.Unmarshal(entries[1].After, &after))
	assert.Equal(t, int64(6), after.Rows)
	assert.Len(t, after.By, 2)
	for _, e := range entries {
		assert.Equal(t, "retention", e.Actor.Subject)
		var reason string
		require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT reason FROM audit_checkpoints WHERE seq = $1`, e.Seq).Scan(&reason),
			"a checkpoint signs the head the run's audit row made")
		assert.Contains(t, reason, "retention purge")
	}
	res := r.verify(t)
	assert.Greater(t, res.Rows, before.Rows)
	assert.GreaterOrEqual(t, res.Checkpoints, 2)

	again := r.pass(t)
	assert.Empty(t, again.Runs, "nothing more is due")
	assert.Len(t, r.purgeRows(t), 2)
}

// TestRetentionSkipsOpenRequests puts dead letters of a day past every
// retention period in replay requests that are not closed (waiting for
// approval, approved with its jobs waiting, a draft), one in a request
// cancelled since, and one whose publish got no answer before its request
// was cancelled (needs_reconciliation, its item still held), and checks
// that a keeper pass leaves the day's partition, removes what no open
// request names, and keeps the rest; once the requests are closed (their
// jobs ended, the unsettled item settled), the next passes remove them
// and drop the day, and the requests still read (their items name dead
// letters that are gone).
func TestRetentionSkipsOpenRequests(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}
	old := r.daysAgo(120)
	pending := r.letters(t, 1, "acme", "email.send", old, dlq.StatusQuarantined)
	approved := r.letters(t, 2, "acme", "search.index_update", old, dlq.StatusQuarantined)
	drafted := r.letters(t, 1, "acme", "search.index_update", old, dlq.StatusQuarantined)
	cancelled := r.letters(t, 1, "acme", "search.index_update", old, dlq.StatusQuarantined)
	unsettled := r.letters(t, 1, "acme", "search.index_update", old, dlq.StatusQuarantined)
	plain := r.letters(t, 2, "acme", "orders.refund", old, dlq.StatusDiscarded)

	waiting := testfactory.Request(t, r.replays, oncall, pending, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, waiting.Status)
	running := testfactory.Request(t, r.replays, oncall, approved, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, running.Status, "rebuildable needs no approval: its jobs wait for a worker")
	_, drafts := testfactory.Draft(t, r.replays, oncall, drafted...)
	gone := testfactory.Request(t, r.replays, oncall, cancelled, replay.SubmitInput{})
	require.NoError(t, r.replays.Cancel(ctx, gone.ID, oncall, "changed my mind", quarantine.RequestMeta{}))
	// A publish that got no answer (as a lost PubAck leaves a job), then a
	// cancel: the request is over, but its item needs a person and stays
	// held (needs_reconciliation).
	unsure := testfactory.Request(t, r.replays, oncall, unsettled, replay.SubmitInput{})
	_, err := r.db.Pool.Exec(ctx, `UPDATE replay_jobs SET state = 'unknown', first_attempt_at = now() WHERE request_id = $1`, unsure.ID)
	require.NoError(t, err)
	require.NoError(t, r.replays.Cancel(ctx, unsure.ID, oncall, "wrong target", quarantine.RequestMeta{}))
	var status string
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT status FROM dead_letters WHERE id = $1`, unsettled[0]).Scan(&status))
	require.Equal(t, string(dlq.StatusNeedsReconciliation), status)

	pass := r.pass(t)
	require.Len(t, pass.Runs, 1, "the day is not emptied whole; a batch of rows goes")
	assert.Empty(t, pass.Runs[0].Partition)
	assert.Contains(t, partitionNames(t, r.db), dlq.PartitionName(old))
	kept := slices.Concat(pending, approved, drafted, unsettled)
	assert.Equal(t, kept, r.remaining(t, slices.Concat(kept, cancelled, plain)),
		"kept: what open requests name and what needs reconciliation; gone: the cancelled request's and the plain ones")
	var held int
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_items WHERE held`).Scan(&held))
	assert.Equal(t, 4, held, "the open requests, and the item that needs a person, still hold their dead letters")
	v, err := r.replays.View(ctx, gone.ID, oncall, replay.ViewOptions{Items: 10})
	require.NoError(t, err, "a closed request whose dead letter went still reads")
	assert.Len(t, v.Items, 1)

	// The requests close: the approved one's jobs end as cancelled, its
	// dead letters go back to quarantine; the draft expires; a person says
	// the unsettled item was not applied.
	require.NoError(t, r.replays.Cancel(ctx, waiting.ID, oncall, "not needed", quarantine.RequestMeta{}))
	require.NoError(t, r.replays.Cancel(ctx, running.ID, oncall, "not needed", quarantine.RequestMeta{}))
	require.NoError(t, r.replays.Cancel(ctx, drafts[0].ID, oncall, "not needed", quarantine.RequestMeta{}))
	approver := quarantine.Actor{Issuer: "https://idp.example", Subject: "approver", Email: "approver@example.com"}
	require.NoError(t, r.replays.Reconcile(ctx, unsure.ID, unsettled[0], approver,
		replay.ReconcileInput{Choice: replaypolicy.NotApplied, Note: "the index has no trace of it"}, quarantine.RequestMeta{}))
	var live int
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_jobs WHERE request_id = $1 AND state IN ('pending', 'claimed', 'deferred', 'unknown', 'needs_reconciliation')`,
		running.ID).Scan(&live))
	assert.Zero(t, live, "the jobs ended")

	pass = r.pass(t)
	require.NotEmpty(t, pass.Runs)
	assert.Empty(t, r.remaining(t, kept), "closed, they go")
	assert.NotContains(t, partitionNames(t, r.db), dlq.PartitionName(old), "and the empty day is dropped")
	for _, id := range []int64{waiting.ID, running.ID, drafts[0].ID, unsure.ID} {
		_, err := r.replays.View(ctx, id, oncall, replay.ViewOptions{Items: 10})
		assert.NoError(t, err, "request %d still reads", id)
	}
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	assert.Empty(t, testfactory.CountersDrift(t, r.db.Pool))
	r.verify(t)
}

// TestRetentionWaitsForDraftsBeingMade races retention with drafts that
// are being made: each draft has read its dead letters and waits (here for
// a lock a test transaction holds on replay_requests) before its items
// commit, so a retention run cannot see them yet. Rows: the run leaves the
// drafted dead letter (the draft locked it) and removes the other one due.
// A whole day: the run does not get the lock emptying the day needs while
// the draft holds its own (it gives way and does not empty the day; before
// migration 0048 it waited for the draft, then saw what it names). Each draft then names its dead letter, which is
// still stored, and nothing a draft names is judged "purged". A draft that
// comes after a run locked its dead letter waits for the run, then finds
// it gone and audits the refusal.
func TestRetentionWaitsForDraftsBeingMade(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}
	all := func(string, replaypolicy.Class) bool { return true }

	// blockDrafts holds replay_requests against inserts until release: a
	// draft being made waits there, after it read its dead letters.
	blockDrafts := func(t *testing.T) (release func()) {
		conn, err := pgx.Connect(ctx, r.db.OwnerURL)
		require.NoError(t, err)
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `LOCK TABLE replay_requests IN SHARE MODE`)
		require.NoError(t, err)
		return func() {
			require.NoError(t, tx.Commit(ctx))
			require.NoError(t, conn.Close(ctx))
		}
	}
	// waiting is how many sessions of the test's database wait for a lock
	// while running a statement that contains what.
	waiting := func(what string) int {
		var n int
		require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, what).Scan(&n))
		return n
	}
	draft := func(ids ...int64) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := r.replays.CreateDrafts(ctx, oncall, ids, nil, true, all, quarantine.RequestMeta{})
			done <- err
		}()
		wait.Until(t, "the draft waits to insert its request", time.Minute, func() bool { return waiting("INSERT INTO replay_requests") == 1 })
		return done
	}
	pass := func() <-chan error {
		done := make(chan error, 1)
		go func() {
			p, err := r.keeper.Pass(ctx)
			if err == nil && p.Skipped {
				err = fmt.Errorf("the keeper pass was skipped")
			}
			done <- err
		}()
		return done
	}
	drafted := func(t *testing.T, id int64) {
		var reason string
		require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT i.skip_reason FROM replay_items i JOIN replay_requests q ON q.id = i.request_id
            WHERE i.dead_letter_id = $1 AND q.status = 'draft'`, id).Scan(&reason))
		assert.NotContains(t, reason, "purged")
	}

	t.Run("Rows", func(t *testing.T) {
		// Discarded 40 days ago: past the 30 days closed dead letters are
		// kept, within the 90 of the day, so they go as rows.
		racing := r.letters(t, 1, "acme", "search.index_update", r.daysAgo(40), dlq.StatusDiscarded)
		due := r.letters(t, 1, "acme", "search.index_update", r.daysAgo(40).Add(time.Hour), dlq.StatusDiscarded)
		release := blockDrafts(t)
		drafting := draft(racing...)
		require.NoError(t, <-pass(), "the run does not wait for the draft")
		release()
		require.NoError(t, <-drafting)
		assert.Equal(t, racing, r.remaining(t, slices.Concat(racing, due)), "the drafted dead letter stays, the other one due went")
		drafted(t, racing[0])
	})

	t.Run("DraftAfterTheRunLockedIt", func(t *testing.T) {
		// The run has deleted the dead letter (not committed: it waits to
		// subtract it from the error groups, which the test holds); a
		// draft of it waits for the run, then finds it gone and says so.
		doomed := r.letters(t, 1, "acme", "search.index_update", r.daysAgo(45), dlq.StatusDiscarded)
		conn, err := pgx.Connect(ctx, r.db.OwnerURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		groups, err := conn.Begin(ctx)
		require.NoError(t, err)
		_, err = groups.Exec(ctx, `LOCK TABLE dead_letter_groups IN SHARE MODE`)
		require.NoError(t, err)
		running := pass()
		wait.Until(t, "the run waits to subtract what it deleted", time.Minute, func() bool { return waiting("INSERT INTO dead_letter_groups AS g") == 1 })
		drafting := make(chan error, 1)
		go func() {
			_, err := r.replays.CreateDrafts(ctx, oncall, doomed, nil, true, all, quarantine.RequestMeta{})
			drafting <- err
		}()
		// (Its statement reads the ledger; pg_stat_activity keeps only the
		// first kilobyte of a statement, without its locking clause.)
		wait.Until(t, "the draft waits for the run's lock on the dead letter", time.Minute, func() bool { return waiting("FROM replay_ledger l") == 1 })
		require.NoError(t, groups.Commit(ctx))
		require.NoError(t, <-running)
		assert.ErrorIs(t, <-drafting, replay.ErrEmptySelection)
		assert.Empty(t, r.remaining(t, doomed))
		page, err := audit.List(ctx, r.db.Pool, audit.Filter{Action: "replay.draft", Limit: audit.MaxLimit})
		require.NoError(t, err)
		var refusals []string
		for _, e := range page.Entries {
			if e.Outcome != audit.OutcomeOK {
				refusals = append(refusals, e.Reason)
			}
		}
		assert.Equal(t, []string{"1 selected dead letters refused: no such dead letter (1)"}, refusals, "the draft audits what it could not take, and why")
	})

	t.Run("WholeDay", func(t *testing.T) {
		// 120 days ago: past every period, so its day is emptied whole.
		racing := r.letters(t, 1, "acme", "search.index_update", r.daysAgo(120), dlq.StatusQuarantined)
		release := blockDrafts(t)
		drafting := draft(racing...)
		// The TRUNCATE's lock is not had while the draft holds its lock on
		// the day: the run gives way (migration 0048), and its rows, the
		// drafted one locked, go as rows.
		require.NoError(t, <-pass(), "the run gives way to the draft's lock on the day")
		release()
		require.NoError(t, <-drafting)
		assert.Equal(t, racing, r.remaining(t, racing), "the day is not emptied: the draft names it")
		assert.Contains(t, partitionNames(t, r.db), dlq.PartitionName(r.daysAgo(120)))
		drafted(t, racing[0])
	})

	_, err := dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	assert.Empty(t, testfactory.CountersDrift(t, r.db.Pool))
	r.verify(t)
}

// TestAuditNeverPurged checks that retention leaves the audit log alone:
// after passes that remove every dead letter the entries are about (whole
// days and rows), every entry and checkpoint is still there and the chain
// verifies; the partition functions refuse the audit tables.
func TestAuditNeverPurged(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	for _, days := range []int{200, 150, 95, 40} {
		r.letters(t, 3, "acme", "orders.refund", r.daysAgo(days), dlq.StatusDiscarded)
		r.letters(t, 2, "acme", "orders.refund", r.daysAgo(days), dlq.StatusQuarantined)
	}
	closer := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall"}
	rows, err := r.db.Pool.Query(ctx, `SELECT id FROM dead_letters WHERE status = 'quarantined' ORDER BY id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	_, err = dlq.NewStore(r.db.Pool).Close(ctx, dlq.CloseInput{IDs: ids[:4], To: dlq.StatusResolved, Reason: "fixed upstream", All: true},
		closer, quarantine.RequestMeta{})
	require.NoError(t, err)
	_, err = audit.Record(ctx, r.db.Pool, r.signer, "before the purge")
	require.NoError(t, err)
	var entries, checkpoints int
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*), (SELECT count(*) FROM audit_checkpoints) FROM audit_log`).Scan(&entries, &checkpoints))
	require.Positive(t, entries)

	pass := r.pass(t)
	require.NotEmpty(t, pass.Runs)
	var left int
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&left))
	assert.Equal(t, 2, left, "only the 40-day-old quarantined ones stay")
	var kept, keptCheckpoints int
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*), (SELECT count(*) FROM audit_checkpoints) FROM audit_log WHERE seq <= $1`,
		entries).Scan(&kept, &keptCheckpoints))
	assert.Equal(t, entries, kept, "every entry from before is still there")
	assert.GreaterOrEqual(t, keptCheckpoints, checkpoints)
	trail, err := audit.ForObject(ctx, r.db.Pool, "dead_letter", fmt.Sprint(ids[0]), 0)
	require.NoError(t, err)
	assert.NotEmpty(t, trail, "the trail of a dead letter that went stays")
	r.verify(t)

	for _, stmt := range []string{
		`SELECT quarantine_dead_letter_partition_empty('audit_log')`,
		`SELECT quarantine_dead_letter_partition_drop('audit_checkpoints')`,
		`SELECT quarantine_dead_letter_partition_hold('audit_log')`,
		`SELECT quarantine_dead_letter_partition_empty('dead_letters_p` + r.today.Format("20060102") + `')`,
	} {
		_, err := r.db.Pool.Exec(ctx, stmt)
		assert.Equal(t, "22023", sqlState(err), "%s: %v", stmt, err)
	}
	_, err = r.db.Pool.Exec(ctx, `SELECT quarantine_dead_letter_partition_make(current_date)`)
	assert.Equal(t, "42501", sqlState(err), "the runtime role may not call the maker directly: %v", err)
}

// TestRetentionGivesWayToABusyDay empties a day past every period while a
// reader holds its partition (a long report, a backup) in a transaction
// that outlasts the run's wait for the lock emptying takes. The run gives
// way: the pass does not fail (it would count as a keeper error, and skip
// the rest of retention, the drops and the trims, pass after pass while
// the reader lasts); the day's dead letters go as a batch of rows instead,
// one audit row for that run and none for the day; once the reader ends,
// the next pass drops the empty day.
func TestRetentionGivesWayToABusyDay(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	old := r.letters(t, 3, "acme", "orders.refund", r.daysAgo(120), dlq.StatusDiscarded)
	day := dlq.PartitionName(r.daysAgo(120))
	reader, err := r.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer reader.Rollback(ctx) //nolint:errcheck // ended below
	var n int
	require.NoError(t, reader.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{day}.Sanitize()).Scan(&n))
	require.Equal(t, 3, n)

	pass, err := r.keeper.Pass(ctx)
	require.NoError(t, err, "a day that cannot be locked is left to the next pass, not a failed pass")
	require.False(t, pass.Skipped)
	require.Len(t, pass.Runs, 1, "no run for the day; one batch of rows")
	assert.Empty(t, pass.Runs[0].Partition)
	assert.Equal(t, int64(3), pass.Runs[0].Rows)
	assert.Empty(t, r.remaining(t, old))
	assert.Len(t, r.purgeRows(t), 1, "one audit row: the run that removed them")
	assert.Contains(t, partitionNames(t, r.db), day, "the reader still holds the day")

	require.NoError(t, reader.Rollback(ctx))
	pass = r.pass(t)
	assert.Empty(t, pass.Runs)
	assert.NotContains(t, partitionNames(t, r.db), day, "the empty day is dropped once nobody holds it")
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	assert.Empty(t, testfactory.CountersDrift(t, r.db.Pool))
	r.verify(t)
}

// TestRetentionKeepsTheLedger replays a dedupe dead letter (a person found
// its effect applied: the ledger holds its message id), lets retention
// remove it, then a new DLQ message of the same original message arrives
// (its producer dead-lettered it again): the replay ledger is never purged
// and names the message, not the row, so a draft of the dead letter that
// came back skips it as already replayed; it is not sent twice. (The same
// DLQ message delivered again is not stored at all:
// TestRetentionRedeliveryStaysPurged.)
func TestRetentionKeepsTheLedger(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	st := dlq.NewStore(r.db.Pool)
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}
	approver := quarantine.Actor{Issuer: "https://idp.example", Subject: "approver", Email: "approver@example.com"}
	at := r.daysAgo(40) // replayed (closed) 40 days ago: past the 30 days, within the day's 90
	store := func(seq uint64) int64 {
		t.Helper()
		rec := dlqMessage("LEDGER", seq, "analytics.click", "click-7", at)
		_, err := st.Insert(ctx, []dlq.Record{rec})
		require.NoError(t, err)
		testfactory.RecordsArrived(t, r.db.Pool, rec)
		_, err = dlq.FoldCounters(ctx, r.db.Pool)
		require.NoError(t, err)
		d, err := st.BySource(ctx, "LEDGER", seq, "")
		require.NoError(t, err)
		return d.ID
	}
	first := store(7)
	req := testfactory.Request(t, r.replays, oncall, []int64{first}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, r.db.Pool, req.ID)
	require.NoError(t, r.replays.Reconcile(ctx, req.ID, first, approver,
		replay.ReconcileInput{Choice: replaypolicy.Applied, Note: "the sink has click 7"}, quarantine.RequestMeta{}))
	var ledger int
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_ledger WHERE msg_id = 'click-7' AND dedupe_key`).Scan(&ledger))
	require.Equal(t, 1, ledger)

	pass := r.pass(t)
	require.Len(t, pass.Runs, 1)
	require.Empty(t, r.remaining(t, []int64{first}), "replayed 40 days ago: removed")

	again := store(8)
	require.NotEqual(t, first, again, "the message came back as a dead letter of its own")
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_ledger WHERE msg_id = 'click-7' AND dedupe_key`).Scan(&ledger))
	assert.Equal(t, 1, ledger, "the ledger still names the message")
	_, err := r.replays.CreateDrafts(ctx, oncall, []int64{again}, nil, true, func(string, replaypolicy.Class) bool { return true }, quarantine.RequestMeta{})
	require.NoError(t, err)
	var check, reason string
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT i.verdict_check, i.skip_reason FROM replay_items i
        JOIN replay_requests q ON q.id = i.request_id WHERE i.dead_letter_id = $1 AND q.status = 'draft'`, again).Scan(&check, &reason))
	assert.Equal(t, replaypolicy.CheckLedger, check, "skipped as already replayed: %s", reason)
	assert.NotEmpty(t, reason)
}

// dlqMessage is the DLQ message of stream at seq, stored by the stream at
// at, as the ingester parses it: acme's, of itemType, message id msgID.
// The same arguments make the same message (a redelivery).
func dlqMessage(stream string, seq uint64, itemType, msgID string, at time.Time) dlq.Record {
	return dlq.ParseDLQ(dlq.DefaultSubjectPrefix, dlq.Received{
		Subject: "dlq.acme." + itemType,
		Header: map[string][]string{dlq.HeaderOriginalSubject: {"app.acme." + itemType}, dlq.HeaderOriginalMsgID: {msgID},
			dlq.HeaderErrorClass: {string(dlq.ClassTransient)}, dlq.HeaderError: {"sink unavailable"},
			dlq.HeaderFirstFailedAt: {at.Add(-testfactory.FirstFailedBefore).Format(time.RFC3339Nano)}},
		Data: []byte(`{"msg":"` + msgID + `"}`), Stream: stream, Seq: seq, Time: at,
	})
}

// TestRetentionRedeliveryStaysPurged removes dead letters by retention (a
// discarded one in a batch of rows, a replayed one with its whole day),
// then the DLQ stream delivers their messages again, as it does to a
// consumer made again (the console makes a missing one again, from the
// first message the stream holds, and a stream without an age limit holds
// them all). They are not stored again: a discarded message would be back
// in the inbox as quarantined, a replayed one replayable again where the
// ledger does not guard it (manual, revalidate); the retention run's audit
// row says where they went. A message first stored late for an old day is
// stored as any other.
func TestRetentionRedeliveryStaysPurged(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	st := dlq.NewStore(r.db.Pool)
	discarded := dlqMessage("PURGED", 1, "orders.refund", "refund-1", r.daysAgo(40)) // past the 30 days of closed ones: a batch of rows
	replayed := dlqMessage("PURGED", 2, "orders.refund", "refund-2", r.daysAgo(120)) // past every period: its day whole
	for _, rec := range []dlq.Record{discarded, replayed} {
		_, err := st.Insert(ctx, []dlq.Record{rec})
		require.NoError(t, err)
		testfactory.RecordsArrived(t, r.db.Pool, rec)
	}
	_, err := dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	stored := func(seq uint64) int {
		var n int
		require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE source_stream = 'PURGED' AND source_seq = $1`, seq).Scan(&n))
		return n
	}
	ids := func(seqs ...uint64) (out []int64) {
		for _, seq := range seqs {
			d, err := st.BySource(ctx, "PURGED", seq, "")
			require.NoError(t, err)
			out = append(out, d.ID)
		}
		return out
	}
	first := ids(1, 2)
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusDiscarded, first[0])
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusReplayed, first[1])

	pass := r.pass(t)
	require.Len(t, pass.Runs, 2, "the day whole, and a batch of rows")
	require.Empty(t, r.remaining(t, first))

	res, err := st.Insert(ctx, []dlq.Record{discarded, replayed})
	require.NoError(t, err)
	assert.Empty(t, res.Inserted, "a message retention removed is not stored again")
	assert.Empty(t, res.Raw)
	assert.Empty(t, res.Unstorable)
	assert.Zero(t, stored(1), "the discarded one is not back in the inbox")
	assert.Zero(t, stored(2), "nor the replayed one")
	for _, rec := range []dlq.Record{discarded, replayed} { // one at a time too
		res, err := st.Insert(ctx, []dlq.Record{rec})
		require.NoError(t, err)
		assert.Empty(t, res.Inserted)
	}

	late := dlqMessage("PURGED", 3, "orders.refund", "refund-3", r.daysAgo(40).Add(time.Minute))
	res, err = st.Insert(ctx, []dlq.Record{late, discarded})
	require.NoError(t, err)
	assert.Len(t, res.Inserted, 1, "a message never stored is stored, however old its day")
	assert.Equal(t, 1, stored(3))
	assert.Zero(t, stored(1))
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	assert.Empty(t, testfactory.CountersDrift(t, r.db.Pool))
	r.verify(t)
}
