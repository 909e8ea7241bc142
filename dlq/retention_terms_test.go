package dlq_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// termsRules are the replay rules every file of these tests shares: only
// their retention differs, so that the replay policy version is one.
const termsRules = `
[[rule]]
item_type = "search.*"
class = "rebuildable"
`

// Retention sections: replayed, discarded and resolved dead letters a
// week, or a month (the default).
const (
	weekTerms = `
[retention]
closed = "7d"
`
	monthTerms = `
[retention]
closed = "30d"
`
)

// termsProcess is a console process started with a policy file: its
// replay service (which activated the file at start, as app does) and its
// keeper, wired as app wires them, logging into log and registering its
// metrics on reg.
type termsProcess struct {
	table  *replaypolicy.Table
	keeper *dlq.Keeper
	reg    *prometheus.Registry
	log    *lockedBuffer
}

// lockedBuffer is a log a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start starts a process named name with rules and terms as its policy
// file.
func (r *retention) start(t *testing.T, name, terms string) *termsProcess {
	t.Helper()
	table, err := replaypolicy.Parse(name+".toml", []byte(termsRules+terms))
	require.NoError(t, err)
	subjects, err := replay.ParseSubjectAllowlist(testfactory.ReplaySubjects)
	require.NoError(t, err)
	svc := replay.New(r.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return table }, Subjects: subjects})
	require.NoError(t, svc.ActivatePolicy(context.Background(), name))
	p := &termsProcess{table: table, reg: prometheus.NewRegistry(), log: &lockedBuffer{}}
	p.keeper = dlq.NewKeeper(dlq.NewStore(r.db.Pool), dlq.KeeperConfig{
		Policy: func() dlq.RetentionPolicy {
			ret := table.Retention()
			return dlq.Terms{RetentionPolicy: app.RetentionOf(ret), Version: replay.RetentionVersion(ret)}
		},
		Checkpoint: func(ctx context.Context, tx pgx.Tx, reason string) error {
			_, err := audit.Record(ctx, tx, r.signer, reason)
			return err
		},
	}, p.reg, slog.New(slog.NewTextHandler(p.log, nil)))
	return p
}

// activate activates name's file as a start does, for starts from other
// goroutines than the test's.
func (r *retention) activate(name, terms string) error {
	table, err := replaypolicy.Parse(name+".toml", []byte(termsRules+terms))
	if err != nil {
		return err
	}
	return replay.New(r.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return table }}).ActivatePolicy(context.Background(), name)
}

// version is the process's retention terms version.
func (p *termsProcess) version() string { return replay.RetentionVersion(p.table.Retention()) }

// pass runs the process's keeper once (it must not be skipped).
func (p *termsProcess) pass(t *testing.T) dlq.KeeperPass {
	t.Helper()
	pass, err := p.keeper.Pass(context.Background())
	require.NoError(t, err)
	require.False(t, pass.Skipped)
	return pass
}

// stale is the process's quarantine_retention_terms_stale.
func (p *termsProcess) stale(t *testing.T) float64 {
	t.Helper()
	return gaugeOf(t, p.reg, "quarantine_retention_terms_stale")
}

// gaugeOf is the value of the gauge name (of no labels) that reg gathers.
func gaugeOf(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s is not exported", name)
	return 0
}

// activeTerms is the active retention terms version.
func (r *retention) activeTerms(t *testing.T) string {
	t.Helper()
	a, err := dlq.ActiveTerms(context.Background(), r.db.Pool)
	require.NoError(t, err)
	return a.Version
}

// TestStaleRetentionTermsDoNotPurge: an older replica, whose file keeps
// closed dead letters a week, restarts after a deploy made a month the
// terms: it does not take its terms back, its keeper removes nothing (not
// the dead letters of ten days ago its week would remove), says why once
// in its log and on quarantine_retention_terms_stale, and the current
// process's keeper removes by a month. A process whose terms are the
// active ones reports 0.
func TestStaleRetentionTermsDoNotPurge(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	old := r.start(t, "old", weekTerms)
	current := r.start(t, "current", monthTerms)
	require.Equal(t, current.version(), r.activeTerms(t))
	tenDays := r.letters(t, 3, "acme", "search.reindex", r.daysAgo(10), dlq.StatusReplayed)
	fortyDays := r.letters(t, 2, "acme", "search.reindex", r.daysAgo(40), dlq.StatusReplayed)

	restarted := r.start(t, "old", weekTerms) // the old image, rescheduled
	assert.Equal(t, current.version(), r.activeTerms(t), "a restart does not take replaced terms back")
	for _, p := range []*termsProcess{old, restarted} {
		pass := p.pass(t)
		assert.True(t, pass.Stale)
		assert.Equal(t, current.version(), pass.Active.Version)
		assert.Empty(t, pass.Runs, "a process whose terms are not the active ones removes nothing")
		assert.Equal(t, 1.0, p.stale(t))
		p.pass(t)
		assert.Equal(t, 1, bytes.Count([]byte(p.log.String()), []byte("retention terms are not the active ones")), "said once: %s", p.log)
		assert.Contains(t, p.log.String(), "active_retention_version="+current.version()[:12])
	}
	assert.Equal(t, append(tenDays, fortyDays...), r.remaining(t, append(tenDays, fortyDays...)))

	pass := current.pass(t)
	assert.False(t, pass.Stale)
	assert.Equal(t, 0.0, current.stale(t))
	assert.Equal(t, int64(2), pass.Removed(), "the active terms remove what a month does not keep")
	assert.Equal(t, tenDays, r.remaining(t, append(tenDays, fortyDays...)))
}

// TestRetentionTermsChangeIsDeployed: a process started with new terms (a
// week where a month was) makes them the active ones, with an audit row
// naming both versions, and its keeper removes by them; the process of the
// month before removes nothing from then on. The replay policy version,
// which the terms are not part of, stays as it was.
func TestRetentionTermsChangeIsDeployed(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	before := r.start(t, "before", monthTerms)
	tenDays := r.letters(t, 3, "acme", "search.reindex", r.daysAgo(10), dlq.StatusDiscarded)
	assert.Empty(t, before.pass(t).Runs, "a month keeps them")
	rules, _, err := replay.PolicyStatus(ctx, r.db.Pool)
	require.NoError(t, err)

	deployed := r.start(t, "deployed", weekTerms)
	assert.Equal(t, deployed.version(), r.activeTerms(t))
	after, _, err := replay.PolicyStatus(ctx, r.db.Pool)
	require.NoError(t, err)
	assert.Equal(t, rules, after, "the rules' version is not the terms'")

	page, err := audit.List(ctx, r.db.Pool, audit.Filter{Action: replay.ActionRetentionTerms, Limit: audit.MaxLimit})
	require.NoError(t, err)
	require.Len(t, page.Entries, 2, "one activation each")
	e := page.Entries[0] // newest first
	assert.Equal(t, deployed.version(), e.ObjectID)
	assert.JSONEq(t, `{"version":"`+before.version()+`"}`, string(e.Before))
	var was struct {
		File  string `json:"file"`
		Terms string `json:"terms"`
	}
	require.NoError(t, json.Unmarshal(e.After, &was))
	assert.Equal(t, "deployed.toml", was.File)
	assert.Contains(t, was.Terms, "closed=168h0m0s")

	assert.True(t, before.pass(t).Stale, "the month's process removes nothing now")
	assert.Equal(t, tenDays, r.remaining(t, tenDays))
	pass := deployed.pass(t)
	assert.False(t, pass.Stale)
	assert.Equal(t, int64(3), pass.Removed())
	assert.Empty(t, r.remaining(t, tenDays))
	r.verify(t)
}

// TestOlderRetentionTermsAreNotTakenBack: terms replaced by a deploy come
// back neither by a restart with their file, nor by a file written again
// with them (other comments and spacing: the same version), nor by two
// processes starting together; only a rollback allowed to them (console
// policy rollback --to their version) lets the next start with them make
// them active, once, and then the newer terms are replaced in turn.
func TestOlderRetentionTermsAreNotTakenBack(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	week := r.start(t, "week", weekTerms)
	month := r.start(t, "month", monthTerms)
	require.Equal(t, month.version(), r.activeTerms(t))

	t.Run("Restart", func(t *testing.T) {
		again := r.start(t, "week", weekTerms)
		assert.Equal(t, month.version(), r.activeTerms(t))
		assert.True(t, again.pass(t).Stale)
	})
	t.Run("FileWrittenAgain", func(t *testing.T) {
		again := r.start(t, "week-edited", "\n# back to a week\n[retention]\n  closed   = \"7d\"   # as before\n")
		assert.Equal(t, week.version(), again.version(), "the same terms are the same version")
		assert.Equal(t, month.version(), r.activeTerms(t))
	})
	t.Run("StartingTogether", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, name := range []string{"week-a", "month-a", "week-b"} {
			terms := weekTerms
			if name == "month-a" {
				terms = monthTerms
			}
			wg.Go(func() { assert.NoError(t, r.activate(name, terms)) })
		}
		wg.Wait()
		assert.Equal(t, month.version(), r.activeTerms(t))
	})
	t.Run("Rollback", func(t *testing.T) {
		actor := quarantine.Actor{Subject: "ops@example.com"}
		allowed, err := replay.AllowPolicyRollback(ctx, r.db.Pool, week.version()[:12], 0, actor, "a month fills the disk")
		require.NoError(t, err)
		assert.Equal(t, week.version(), allowed.Version)
		_, err = replay.AllowPolicyRollback(ctx, r.db.Pool, month.version()[:12], 0, actor, "nothing to go back to")
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "the active terms: %v", err)
		assert.ErrorContains(t, err, "allow retention terms "+month.version()[:12]+" again: ", "the error names what the version is")

		back := r.start(t, "week", weekTerms)
		assert.Equal(t, week.version(), r.activeTerms(t), "the allowance lets this start through")
		tenDays := r.letters(t, 2, "acme", "search.reindex", r.daysAgo(10), dlq.StatusResolved)
		assert.True(t, month.pass(t).Stale)
		assert.Equal(t, int64(2), back.pass(t).Removed())
		assert.Empty(t, r.remaining(t, tenDays))

		r.start(t, "month", monthTerms) // the month's replica restarting
		assert.Equal(t, week.version(), r.activeTerms(t), "the month is replaced now, and the allowance used")
		page, err := audit.List(ctx, r.db.Pool, audit.Filter{Action: replay.ActionRetentionTermsRollback, Limit: audit.MaxLimit})
		require.NoError(t, err)
		require.Len(t, page.Entries, 1)
		assert.Equal(t, "ops@example.com", page.Entries[0].Actor.Subject)
	})
}

// TestRetentionTermsActivationWaitsForARun: a start that makes other terms
// active waits for the retention run under way (here held at its
// checkpoint, before its commit), and the keeper's next run, under the
// terms replaced meanwhile, removes nothing: no run removes by terms that
// stopped being the active ones while it ran.
func TestRetentionTermsActivationWaitsForARun(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	week := r.start(t, "week", weekTerms)
	tenDays := r.letters(t, 2, "acme", "search.reindex", r.daysAgo(10), dlq.StatusReplayed)
	inRun, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	keeper := dlq.NewKeeper(dlq.NewStore(r.db.Pool), dlq.KeeperConfig{
		BatchRows: 1, // a run per dead letter
		Policy: func() dlq.RetentionPolicy {
			ret := week.table.Retention()
			return dlq.Terms{RetentionPolicy: app.RetentionOf(ret), Version: replay.RetentionVersion(ret)}
		},
		Checkpoint: func(ctx context.Context, tx pgx.Tx, reason string) error {
			once.Do(func() { close(inRun); <-release })
			_, err := audit.Record(ctx, tx, r.signer, reason)
			return err
		},
	}, nil, quiet)
	passed := make(chan dlq.KeeperPass, 1)
	go func() {
		pass, err := keeper.Pass(ctx)
		assert.NoError(t, err)
		passed <- pass
	}()
	<-inRun
	activated := make(chan error, 1)
	go func() { activated <- r.activate("month", monthTerms) }()
	wait.Until(t, "the activation waits for the run's terms lock", 10*time.Second, func() bool {
		// The terms lock ("QDLTERM", 0x51444c5445524d00): its high and low
		// halves, as pg_locks shows a bigint key.
		var waiting int
		err := r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
            AND classid = x'51444c54'::int::oid AND objid = x'45524d00'::int::oid AND objsubid = 1`).Scan(&waiting)
		return err == nil && waiting == 1
	})
	assert.Equal(t, week.version(), r.activeTerms(t), "not active before the run commits")
	close(release)
	require.NoError(t, <-activated)
	pass := <-passed
	assert.Equal(t, int64(1), pass.Removed(), "the run under way commits")
	assert.True(t, pass.Stale, "the next run finds other terms active")
	assert.Len(t, r.remaining(t, tenDays), 1)
	assert.NotEqual(t, week.version(), r.activeTerms(t))
}
