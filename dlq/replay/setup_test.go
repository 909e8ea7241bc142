package replay_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

var (
	oncall    = quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}
	approver1 = quarantine.Actor{Issuer: "https://idp.example", Subject: "approver1", Email: "a1@example.com"}
	approver2 = quarantine.Actor{Issuer: "https://idp.example", Subject: "approver2", Email: "a2@example.com"}
)

// bundle is a fresh database and NATS server.
type bundle struct {
	db    *testdb.DB
	ns    *natstest.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	store *dlq.Store
}

func setup(t testing.TB) *bundle {
	t.Helper()
	b := &bundle{db: testdb.New(t), ns: natstest.Start(t)}
	b.nc, b.js = b.ns.Connect(t)
	b.store = dlq.NewStore(b.db.Pool)
	return b
}

func (b *bundle) createStream(t testing.TB, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	s, err := b.js.CreateStream(context.Background(), cfg)
	require.NoError(t, err)
	return s
}

type replayBundle struct {
	*bundle
	policy  atomic.Pointer[replaypolicy.Table]
	replays *replay.Service
	auth    authz.Authority
	target  jetstream.Stream
	now     atomic.Pointer[time.Time] // nil: the real clock
	log     *slog.Logger
}

// clock is the service's clock: now, or the time the test set.
func (b *replayBundle) clock() time.Time {
	if n := b.now.Load(); n != nil {
		return *n
	}
	return time.Now()
}

// setupReplay gives a fresh database and NATS server, the shipped policy
// table, a target stream APP on app.>, and the people of the tests signed in
// once (so the execution-time role checks find them).
func setupReplay(t *testing.T) *replayBundle {
	t.Helper()
	b := &replayBundle{bundle: setup(t)}
	table, err := replaypolicy.Load("../../dev/policy.toml")
	require.NoError(t, err)
	b.policy.Store(table)
	b.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("REPLAY_TEST_LOG") != "" {
		b.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	access, err := authz.NewAccess(context.Background(), b.db.Pool, authz.GroupMap{Prefix: "quarantine:"}, b.log)
	require.NoError(t, err)
	dir := authz.NewDirectory(b.db.Pool)
	b.auth = authz.Authority{Access: access, Directory: dir}
	b.replays = replay.New(b.db.Pool, b.config(t))
	for a, groups := range map[quarantine.Actor][]string{
		oncall: {"quarantine:acme:oncall"}, approver1: {"quarantine:acme:approver"}, approver2: {"quarantine:acme:approver"},
	} {
		require.NoError(t, dir.Remember(context.Background(), authz.User{Actor: a, Groups: groups}))
	}
	b.target = b.createStream(t, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})
	return b
}

// config is the replay service's configuration of the tests: the bundle's
// policy, clock and authority, the tests' replay subjects, a revalidation service
// (each test's worker brings its responder), and the target streams'
// duplicate windows read from NATS with a small margin.
func (b *replayBundle) config(t testing.TB) replay.Config {
	return replay.Config{Policy: b.policy.Load, Subjects: testSubjects(t), Now: b.clock, Revalidation: true, Authority: b.auth,
		Windows: replay.NewStreamWindows(b.js, time.Second), WindowMargin: 100 * time.Millisecond, MaxPayload: b.nc.MaxPayload()}
}

// seedItem stores a dead letter of tenant acme, with its message id and a
// correlation id made from it, and returns its id.
func (b *replayBundle) seedItem(t *testing.T, itemType, msgID string, hdr nats.Header, payload string) int64 {
	t.Helper()
	return testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{
		ItemType: itemType, MsgID: msgID, CorrelationID: "corr-" + msgID, Payload: []byte(payload), Headers: hdr,
	})
}

func allowAll(string, replaypolicy.Class) bool { return true }

// mayScopes are the places, in tenants, where may lets a viewer act on the
// replays of each class (what Waiting and Awaiting take).
func mayScopes(tenants []string, may func(string, replaypolicy.Class) bool) []replay.ClassScope {
	var out []replay.ClassScope
	for _, c := range replaypolicy.KnownClasses() {
		sc := replay.ClassScope{Class: c}
		for _, t := range tenants {
			if may(t, c) {
				sc.Tenants = append(sc.Tenants, t)
			}
		}
		if len(sc.Tenants) > 0 {
			out = append(out, sc)
		}
	}
	return out
}

// testSubjects are the replay subjects of the tests' tenants: the target
// streams APP (app.<tenant>.>) and EVENTS (events.<tenant>.>).
func testSubjects(t testing.TB) *replay.SubjectAllowlist {
	t.Helper()
	s, err := replay.ParseSubjectAllowlist("app.{tenant}.>, events.{tenant}.>")
	require.NoError(t, err)
	return s
}

// draft freezes ids as requester's selection.
func (b *replayBundle) draft(t *testing.T, requester quarantine.Actor, ids ...int64) (string, []replay.Request) {
	t.Helper()
	return testfactory.Draft(t, b.replays, requester, ids...)
}

// request drafts and submits a replay of ids by oncall and returns the
// single request it made.
func (b *replayBundle) request(t *testing.T, ids []int64, in replay.SubmitInput) replay.Request {
	t.Helper()
	return testfactory.Request(t, b.replays, oncall, ids, in)
}

// itemsOf returns the items of drafts (up to 10 each) by dead letter.
func (b *replayBundle) itemsOf(t *testing.T, drafts []replay.Request) map[int64]replay.Item {
	t.Helper()
	out := map[int64]replay.Item{}
	for _, d := range drafts {
		items, err := b.replays.Items(context.Background(), d.ID, 10)
		require.NoError(t, err)
		for _, it := range items {
			out[it.DeadLetterID] = it
		}
	}
	return out
}

// editedAwaiting seeds a rebuildable dead letter ({"doc":1}), drafts
// its replay by oncall, edits its payload to {"doc":2} and submits it: a
// request that waits for approval only because of its edit. It returns
// the dead letter and the request.
func (b *replayBundle) editedAwaiting(t *testing.T, msgID string) (dl, id int64) {
	t.Helper()
	ctx := context.Background()
	dl = b.seedItem(t, "search.index_update", msgID, nil, `{"doc":1}`)
	batch, drafts := b.draft(t, oncall, dl)
	require.Len(t, drafts, 1)
	id = drafts[0].ID
	require.NoError(t, b.replays.EditPayload(ctx, id, dl, oncall, replay.PayloadEdit{Payload: []byte(`{"doc":2}`), Reason: "fix"}, quarantine.RequestMeta{}))
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Equal(t, replay.StatusPendingApproval, reqs[0].Status)
	return dl, id
}

// worker is a worker of the test's requests (polling every 20 ms, and
// waiting a minute for a PubAck unless cfg says otherwise); reval answers
// for revalidate items (none: they wait for a worker that has one).
func (b *replayBundle) worker(t *testing.T, cfg replay.WorkerConfig, reval ...replay.Revalidator) *replay.Worker {
	t.Helper()
	return b.workerOn(t, b.js, cfg, reval...)
}

// workerOn is worker publishing through js.
func (b *replayBundle) workerOn(t *testing.T, js jetstream.JetStream, cfg replay.WorkerConfig, reval ...replay.Revalidator) *replay.Worker {
	t.Helper()
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	if cfg.AckTimeout == 0 {
		// A PubAck is waited for as long as a slow machine needs: one
		// that does not come in time makes the outcome unknown, which
		// only the tests that lose acks (OnAck) or set a timeout mean.
		cfg.AckTimeout = time.Minute
	}
	var r replay.Revalidator
	if len(reval) > 0 {
		r = reval[0]
	}
	return replay.NewWorker(b.replays, js, b.auth, r, cfg, b.log)
}

// run runs w until the test ends.
func run(t *testing.T, w *replay.Worker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// waitStatus waits until request id is want, and returns it. A request
// ends after every step of its jobs: on a loaded machine that may take
// a minute and more, which a wait that holds early does not cost.
func (b *replayBundle) waitStatus(t *testing.T, id int64, want replay.Status) replay.Request {
	t.Helper()
	var r replay.Request
	wait.For(t, fmt.Sprintf("request %d to be %s", id, want), 2*time.Minute, func() error {
		var err error
		r, err = b.replays.Request(context.Background(), id)
		require.NoError(t, err)
		if r.Status == want {
			return nil
		}
		return fmt.Errorf("it is %s (%s); its jobs: %s", r.Status, r.StatusReason, b.jobsText(t, id))
	})
	return r
}

// jobsText is what became of each job of request id, for a failure's
// message.
func (b *replayBundle) jobsText(t *testing.T, id int64) string {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT dead_letter_id, state, result, attempts FROM replay_jobs WHERE request_id = $1 ORDER BY dead_letter_id`, id)
	require.NoError(t, err)
	var out []string
	var dl int64
	var state, result string
	var attempts int
	_, err = pgx.ForEachRow(rows, []any{&dl, &state, &result, &attempts}, func() error {
		out = append(out, fmt.Sprintf("%d %s after %d claims: %s", dl, state, attempts, result))
		return nil
	})
	require.NoError(t, err)
	return strings.Join(out, "; ")
}

// waitFinished waits until request id ends, done or done with problems,
// and returns it.
func (b *replayBundle) waitFinished(t *testing.T, id int64) replay.Request {
	t.Helper()
	var r replay.Request
	wait.Until(t, fmt.Sprintf("request %d to finish", id), 2*time.Minute, func() bool {
		var err error
		r, err = b.replays.Request(context.Background(), id)
		require.NoError(t, err)
		return r.Status == replay.StatusDone || r.Status == replay.StatusDoneWithProblems
	})
	return r
}

// onSubject counts the messages of the target stream on subject.
func (b *replayBundle) onSubject(t *testing.T, subject string) int {
	t.Helper()
	info, err := b.target.Info(context.Background(), jetstream.WithSubjectFilter(subject))
	require.NoError(t, err)
	return int(info.State.Subjects[subject])
}

// leaseRunsOut ends now the leases of request id's claimed jobs, as the
// clock does once the worker that claimed them is gone. A test's dying
// worker gets a lease long enough to publish on however slow a machine
// (a short one could run out before its publish, which then never
// happens), and the test does not sit out that lease.
func (b *replayBundle) leaseRunsOut(t *testing.T, id int64) {
	t.Helper()
	tag, err := b.db.Pool.Exec(context.Background(), `UPDATE replay_jobs SET lease_until = now() - interval '1 millisecond'
        WHERE request_id = $1 AND state = 'claimed'`, id)
	require.NoError(t, err)
	require.Positive(t, tag.RowsAffected(), "request %d has claimed jobs", id)
}

func (b *replayBundle) jobStates(t *testing.T, requestID int64) map[string]int {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT state, count(*) FROM replay_jobs WHERE request_id = $1 GROUP BY 1`, requestID)
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		require.NoError(t, rows.Scan(&s, &n))
		out[s] = n
	}
	return out
}

// policyAt is the shipped policy (../../dev/policy.toml, default_rate 500)
// with its default rate set to rate: another version of it.
func policyAt(t testing.TB, rate int) *replaypolicy.Table {
	t.Helper()
	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	table, err := replaypolicy.Parse(fmt.Sprintf("rate-%d.toml", rate), []byte(strings.Replace(string(src), "default_rate = 500", fmt.Sprintf("default_rate = %d", rate), 1)))
	require.NoError(t, err)
	return table
}

// activateElsewhere has another process, whose policy file holds table,
// make table the active version: b's service then judges nothing until
// its own file has it (a stale process).
func activateElsewhere(t testing.TB, b *replayBundle, table *replaypolicy.Table) {
	t.Helper()
	require.NoError(t, replay.New(b.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return table }, Subjects: testSubjects(t)}).
		ActivatePolicy(context.Background(), "newer-host"))
}

// waitLockWaiters waits until n sessions of the test's database wait for a
// lock: the statements under test, blocked on a row another transaction
// of the test holds.
func (b *replayBundle) waitLockWaiters(t *testing.T, what string, n int) {
	t.Helper()
	b.waitLockWaitersOr(t, what, n, nil)
}

// waitLockWaitersOr is waitLockWaiters that also ends once done is closed
// (what was to block finished instead; nil: never).
func (b *replayBundle) waitLockWaitersOr(t *testing.T, what string, n int, done <-chan struct{}) {
	t.Helper()
	wait.For(t, what, 10*time.Second, func() error {
		select {
		case <-done:
			return nil
		default:
		}
		var waiting int
		if err := b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			return err
		}
		if waiting != n {
			return fmt.Errorf("%d waiting: %w", waiting, wait.ErrNotYet)
		}
		return nil
	})
}
