package dlq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// KeeperConfig says how the keeper looks after dead_letters' partitions
// and retention.
type KeeperConfig struct {
	// Every is how often it runs (RETENTION_EVERY); default 10
	// minutes. It also runs once at start.
	Every time.Duration
	// Ahead is how many days after today have a partition (made before
	// they come); default 7.
	Ahead int
	// BatchRows bounds one retention run that deletes rows; default 10,000.
	BatchRows int
	// MaxRuns bounds the retention runs of one keeper pass (the rest waits
	// for the next); default 100.
	MaxRuns int
	// Policy gives the retention terms in force, asked once at the start of
	// each pass (a policy reloaded since applies from the next pass); nil,
	// or nil terms, removes nothing. Terms given as Terms carry their
	// version: the keeper removes dead letters by them only while they are
	// the active terms (ActiveTerms), and nothing while other terms are.
	Policy func() RetentionPolicy
	// Checkpoint signs the audit chain's head before anything goes.
	Checkpoint Checkpointer
	// Now is this process's clock, for how old a look at a stream is
	// (firstSeq); default time.Now. What is old enough to go, and which day
	// is today, are judged on the database's clock (Pass): replicas whose
	// clocks differ judge alike.
	Now func() time.Time
	// JetStream is asked for the first sequence of the streams whose
	// messages' keys retention kept (dead_letters_purged): the keys below
	// it go (trimPurgedKeys). Nil: every key is kept.
	JetStream jetstream.JetStream
	// AckWait is the ingest consumers' ack wait (INGEST_ACK_WAIT); default
	// 1 minute. Keys go only below where a stream began at a look at least
	// max(Every, AckWait) old (firstSeq). A batch holds a message longer
	// than its ack wait only while its writer keeps it in progress, with
	// PostgreSQL unreachable or busy (keepInProgress); one stored after the
	// margin is flagged (flagTrimmed).
	AckWait time.Duration
}

func (c *KeeperConfig) defaults() {
	if c.Every <= 0 {
		c.Every = 10 * time.Minute
	}
	if c.Ahead <= 0 {
		c.Ahead = 7
	}
	if c.BatchRows <= 0 {
		c.BatchRows = 10_000
	}
	if c.MaxRuns <= 0 {
		c.MaxRuns = 100
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.AckWait <= 0 {
		c.AckWait = time.Minute
	}
}

// Keeper makes dead_letters' partitions ahead and applies retention. Every
// console runs one; they take turns under an advisory lock, so one pass
// runs at a time across replicas and the others skip theirs.
type Keeper struct {
	store   *Store
	pool    *pgxpool.Pool
	cfg     KeeperConfig
	log     *slog.Logger
	metrics *keeperMetrics
	// stale is the active terms' version when the last pass found this
	// process's terms replaced by them (it logs each change once).
	stale string
	// firstSeen is what the passes saw of each stream, oldest first, from
	// the newest look old enough to trust on (firstSeq); passes run one at
	// a time.
	firstSeen map[string][]streamLook
	// giveWays counts, for each day's drop or emptying, the passes in a
	// row it gave way to a lock (gaveWayAgain).
	giveWays map[string]int
}

// NewKeeper returns a keeper on store's pool, registering its metrics on
// reg (nil: none).
func NewKeeper(store *Store, cfg KeeperConfig, reg prometheus.Registerer, log *slog.Logger) *Keeper {
	cfg.defaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Keeper{store: store, pool: store.pool, cfg: cfg, log: log, metrics: newKeeperMetrics(reg), firstSeen: map[string][]streamLook{},
		giveWays: map[string]int{}}
}

// keeperLockKey is the advisory lock of a keeper pass ("QDLKEEP").
const keeperLockKey int64 = 0x51444c4b45455000

// KeeperLockKey is keeperLockKey, for what must hold the keepers off a
// while (a test seeding dead letters older than retention keeps, before
// it makes them part of a request).
const KeeperLockKey = keeperLockKey

// KeeperPass is what one pass did.
type KeeperPass struct {
	// Skipped: another console held the lock.
	Skipped bool
	// Made counts partitions made ahead; Dropped empty past ones dropped.
	Made, Dropped int
	// Stale: this process's retention terms are not the active ones, so
	// the pass removed no dead letters; Active is the active terms.
	Stale  bool
	Active TermsActivation
	// termsUnread: the active terms could not be read this pass, so
	// whether they are this process's is not known (Stale says nothing).
	termsUnread bool
	// Runs are the retention runs, in order. Behind counts the parts of
	// retention (tenant and status pairs) a run of which outlasted the
	// statement timeout: they go at a later pass, the pass went on.
	Runs   []PurgeRun
	Behind int
	// Trimmed counts arrival counter rows removed.
	Trimmed int64
	// KeyRuns are the batches of purged source keys removed, their
	// messages gone from their stream; KeysKept are the streams whose keys
	// were all kept because the stream could not be read (or does not
	// exist), with why.
	KeyRuns  []TrimRun
	KeysKept map[string]error
	// ClockAhead is how far the database's clock was ahead of this
	// console's, when by more than maxClockSkew: the pass then removed
	// nothing by age (no retention run, no empty past partition dropped, no
	// arrival count trimmed). Zero otherwise.
	ClockAhead time.Duration
}

// KeysTrimmed is how many purged source keys the pass removed.
func (p KeeperPass) KeysTrimmed() int64 {
	var n int64
	for _, r := range p.KeyRuns {
		n += r.Keys
	}
	return n
}

// Removed is how many dead letters the pass's runs removed.
func (p KeeperPass) Removed() int64 {
	var n int64
	for _, r := range p.Runs {
		n += r.Rows
	}
	return n
}

// Run makes a pass now and then every Every until ctx ends. A pass that
// fails is logged (and counted) and the next one tries again.
func (k *Keeper) Run(ctx context.Context) {
	t := time.NewTicker(k.cfg.Every)
	defer t.Stop()
	for {
		pass, err := k.Pass(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			k.metrics.errors.Inc()
			k.log.Warn("partition keeper: pass failed; trying again at the next", "err", err, "next_in", k.cfg.Every)
		case pass.Made+pass.Dropped > 0 || len(pass.Runs)+len(pass.KeyRuns) > 0:
			k.log.Info("partition keeper", "partitions_made", pass.Made, "partitions_dropped", pass.Dropped,
				"retention_runs", len(pass.Runs), "dead_letters_removed", pass.Removed(), "arrival_rows_trimmed", pass.Trimmed,
				"purged_keys_trimmed", pass.KeysTrimmed())
		}
		for stream, why := range pass.KeysKept {
			msg := "partition keeper: the stream cannot be read; the source keys of its removed dead letters are all kept"
			if streamMissing(why) {
				msg = "partition keeper: the stream does not exist; the source keys of its removed dead letters are kept (gone for good: console retention forget-stream, docs/runbook.md)"
			}
			k.log.Info(msg, "stream", stream, "err", why)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Pass makes the partitions of today and Ahead days after, applies
// retention (whole past days when everything in them may go, bounded
// batches of rows otherwise, at most MaxRuns runs), drops the empty
// partitions of days past every retention period, trims old arrival
// counters, and removes the kept source keys of removed dead letters whose
// messages are gone from their stream (trimPurgedKeys, at most MaxRuns
// batches of BatchRows); it holds one connection and the keepers' advisory
// lock for all of it, and skips when another console holds the lock.
func (k *Keeper) Pass(ctx context.Context) (KeeperPass, error) {
	var pass KeeperPass
	conn, err := k.pool.Acquire(ctx)
	if err != nil {
		return pass, fmt.Errorf("partition keeper: %w", err)
	}
	defer conn.Release()
	var mine bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, keeperLockKey).Scan(&mine); err != nil {
		return pass, fmt.Errorf("partition keeper: lock: %w", err)
	}
	if !mine {
		pass.Skipped = true
		k.metrics.ahead.Set(0) // another console's pass holds retention, or not, by its own clock
		// Whether this console would remove anything is still said.
		if err := k.sayTerms(ctx, conn, &pass); err != nil {
			return pass, fmt.Errorf("partition keeper: %w", err)
		}
		return pass, nil
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, keeperLockKey); err != nil {
			conn.Conn().Close(uctx) //nolint:errcheck // closing drops the lock anyway
		}
	}()
	var now time.Time
	if err := conn.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return pass, fmt.Errorf("partition keeper: the database's clock: %w", err)
	}
	switch skew := k.cfg.Now().Sub(now); {
	case skew < -maxClockSkew:
		// Ages are the database's (received_at, now()), so a database
		// clock that jumped ahead (a failover to a host N days fast)
		// would make every dead letter N days older and remove for good
		// what its period still keeps. Removing later costs nothing; a
		// console whose own clock is behind only delays it.
		pass.ClockAhead = -skew
		k.log.Warn("partition keeper: the database's clock is ahead of this console's; this pass removes nothing by age (retention, empty past partitions, arrival counts) until they agree",
			"ahead", pass.ClockAhead.Round(time.Second), "database_now", now, "console_now", k.cfg.Now())
	case skew > maxClockSkew:
		k.log.Warn("partition keeper: this console's clock differs from the database's; retention and partitions go by the database's",
			"skew", skew.Round(time.Second))
	}
	k.metrics.ahead.Set(pass.ClockAhead.Seconds())
	err = k.steps(ctx, conn.Conn(), &pass, now)
	// What committed counts, and is announced, even when a later step failed.
	k.metrics.count(pass)
	if pass.Made+pass.Dropped > 0 || pass.Removed() > 0 {
		// The partition map and the counters changed: every console reads them again.
		if aerr := Announce(ctx, conn.Conn()); aerr != nil && err == nil {
			err = aerr
		}
	}
	if err != nil {
		return pass, err
	}
	// Dated by this console's clock, as Prometheus's time() that the alert
	// compares it with is a host's: the database's, were it days ahead,
	// would date it in the future and keep PartitionKeeperStopped quiet.
	k.metrics.lastPass.Set(float64(k.cfg.Now().Unix()))
	return pass, nil
}

// steps runs a pass's steps in turn, filling pass with what each did.
// Making partitions ahead failing stops the pass; any other step failing
// does not stop the steps after it (retention, dropping empty days,
// trimming), which do not depend on it: one part that keeps failing (a
// day too large for the statement timeout, an empty day a view depends
// on) would otherwise stop them all, every pass. The errors are returned
// together.
func (k *Keeper) steps(ctx context.Context, conn *pgx.Conn, pass *KeeperPass, now time.Time) error {
	var err error
	if pass.Made, err = k.makeAhead(ctx, conn, now); err != nil {
		return err
	}
	if pass.ClockAhead > 0 {
		// Whether this console's terms are the active ones is still said
		// (RetentionTermsStale), as a pass another console holds the lock
		// of says it; a failed read of them leaves the gauge as it was.
		_ = k.sayTerms(ctx, conn, pass)
		pass.KeyRuns, pass.KeysKept, err = k.trimPurgedKeys(ctx, conn, k.cfg.BatchRows, k.cfg.MaxRuns)
		return err
	}
	var terms RetentionPolicy
	if k.cfg.Policy != nil {
		terms = k.cfg.Policy()
	}
	var retained error
	if terms != nil {
		pass.Runs, retained = k.retention(ctx, conn, terms, now, pass)
		if !pass.termsUnread {
			// A read of the active terms that failed says nothing of
			// them: the gauge and the log keep what the last read said
			// (a false "active again" would reset RetentionTermsStale).
			k.sayStale(*pass, terms)
		}
	}
	if ctx.Err() != nil {
		return errors.Join(retained, ctx.Err())
	}
	var dropped, trimmed error
	pass.Dropped, dropped = k.dropEmpty(ctx, conn, now)
	if passOver(ctx, conn) {
		return errors.Join(retained, dropped)
	}
	pass.Trimmed, trimmed = trimArrivals(ctx, conn, now, k.cfg.BatchRows, k.cfg.MaxRuns)
	if passOver(ctx, conn) {
		return errors.Join(retained, dropped, trimmed)
	}
	pass.KeyRuns, pass.KeysKept, err = k.trimPurgedKeys(ctx, conn, k.cfg.BatchRows, k.cfg.MaxRuns)
	return errors.Join(retained, dropped, trimmed, err)
}

// passOver reports whether a pass can do nothing more on conn: its
// context ended, or the connection is gone. A failure then is no day's
// own, and the steps and days after it are not tried.
func passOver(ctx context.Context, conn *pgx.Conn) bool {
	return ctx.Err() != nil || conn.IsClosed()
}

// sayTerms reads whether this console's retention terms are the active
// ones into pass and says so (sayStale), for a pass that removes nothing
// whatever they are: one another console holds the lock of, or one held by
// a database clock ahead. An error is a failed read of the active terms,
// which says nothing.
func (k *Keeper) sayTerms(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, pass *KeeperPass) error {
	if k.cfg.Policy == nil {
		return nil
	}
	terms := k.cfg.Policy()
	if terms == nil {
		return nil
	}
	active, err := ActiveTerms(ctx, q)
	if err != nil {
		return err
	}
	pass.Stale, pass.Active = active.Stale(termsVersion(terms)), active
	k.sayStale(*pass, terms)
	return nil
}

// maxClockSkew is how far this console's clock may be from the database's
// before a pass says so (it judges by the database's either way), and how
// far the database's may be ahead before a pass removes nothing by age.
const maxClockSkew = time.Minute

// makeAhead makes the partitions of yesterday, today and Ahead days after.
func (k *Keeper) makeAhead(ctx context.Context, conn *pgx.Conn, now time.Time) (int, error) {
	days := make([]time.Time, 0, k.cfg.Ahead+2)
	for i := -1; i <= k.cfg.Ahead; i++ {
		days = append(days, Day(now).AddDate(0, 0, i))
	}
	var made int
	if err := conn.QueryRow(ctx, `SELECT quarantine_dead_letter_partitions($1)`, days).Scan(&made); err != nil {
		return 0, fmt.Errorf("make partitions ahead: %w", err)
	}
	return made, nil
}

// retention empties whole past days where it can (past the longest
// retention period, nothing an open request names), then deletes batches
// of rows, MaxRuns runs at most.
func (k *Keeper) retention(ctx context.Context, conn *pgx.Conn, terms RetentionPolicy, now time.Time, pass *KeeperPass) ([]PurgeRun, error) {
	var runs []PurgeRun
	// Every run removes under the terms it was judged by: it holds the
	// terms lock shared from the check to its commit, and an activation
	// of other terms waits for it (underTerms).
	version := termsVersion(terms)
	if active, err := ActiveTerms(ctx, conn); err != nil || active.Stale(version) {
		pass.Stale, pass.Active, pass.termsUnread = err == nil, active, err != nil
		return nil, err
	}
	purge := func(run func() error) (bool, error) {
		held, active, err := underTerms(ctx, conn, version, run)
		if !held && err == nil {
			pass.Stale, pass.Active = true, active
		}
		return held, err
	}
	parts, err := listPartitions(ctx, conn)
	if err != nil {
		return nil, err
	}
	var failed []error // days that failed for reasons of their own
	longest, bounded := terms.Longest()
	for _, p := range parts {
		// A day is emptied whole once it is past every retention period
		// and so is everything in it by when it arrived (purgeDay asks;
		// before, rows go in batches); today and later never are, and an
		// empty day has nothing to go.
		if !bounded || len(runs) >= k.cfg.MaxRuns || p.MaxID == 0 || !p.End().Before(Day(now)) || p.End().After(now.Add(-longest)) {
			continue
		}
		var run PurgeRun
		var emptied bool
		held, err := purge(func() (err error) {
			run, emptied, err = k.store.purgeDay(ctx, conn, p, terms, k.cfg.Checkpoint, now)
			return err
		})
		if !held && err == nil {
			return runs, errors.Join(failed...)
		}
		if gaveWay(err) || timedOut(ctx, err) {
			// A writer of the day outlasted the wait for holdDay's lock, or
			// readers or a writer kept the TRUNCATE's lock from the run
			// (quarantine_dead_letter_partition_empty), or a statement of
			// the run outlasted the statement timeout (a day too large to
			// count and keep in one): the run rolled back, the day's dead
			// letters go as rows below, the day whole at a later pass.
			k.gaveWayAgain(ctx, conn, "empty", p.Name,
				"partition keeper: a past day is busy or too large to empty at once; its dead letters go in batches, the day is emptied whole at a later pass", err)
			continue
		}
		if err != nil {
			if passOver(ctx, conn) {
				return runs, errors.Join(append(failed, err)...)
			}
			// This day's own (a view or a foreign key on it, a damaged
			// page): the other days, and the batches of rows below,
			// go on; the pass fails with it, and so does every pass
			// until it is dealt with.
			failed = append(failed, fmt.Errorf("empty partition %s: %w", p.Name, err))
			continue
		}
		k.wentThrough("empty", p.Name)
		if emptied {
			runs = append(runs, run)
		}
	}
	combos, err := k.combos(ctx, conn)
	if err != nil {
		return runs, errors.Join(append(failed, err)...)
	}
	// A run takes dead letters of at most maxPurgeBreakdown tenant and
	// status pairs, so that its audit row names every one of them. A part
	// whose run outlasts the statement timeout is left for the next pass,
	// and the others go on (pass.Behind, logged; the pass is no failure).
parts:
	for _, part := range byBreakdown(combos, maxPurgeBreakdown) {
		for len(runs) < k.cfg.MaxRuns {
			var run PurgeRun
			held, err := purge(func() (err error) {
				run, err = k.store.purgeRows(ctx, conn, part, terms, k.cfg.Checkpoint, now, k.cfg.BatchRows)
				return err
			})
			if !held && err == nil {
				return runs, errors.Join(failed...)
			}
			if gaveWay(err) {
				k.log.Info("partition keeper: retention gave way to a lock; what is due goes at the next pass", "err", err)
				return runs, errors.Join(failed...)
			}
			if timedOut(ctx, err) {
				k.log.Warn("partition keeper: a retention run outlasted the statement timeout; its part goes at a later pass, the others now "+
					"(DATABASE_WORKER_STATEMENT_TIMEOUT, or RETENTION_BATCH smaller)", "err", err)
				pass.Behind++
				continue parts
			}
			if err != nil {
				return runs, errors.Join(append(failed, err)...)
			}
			if run.Rows == 0 {
				break
			}
			runs = append(runs, run)
			if run.Rows < int64(k.cfg.BatchRows) {
				// Nothing more of these is due, or what is left was
				// passed over (a draft locks it: SKIP LOCKED) or named by
				// a request since: the next pass takes it.
				break
			}
		}
	}
	return runs, errors.Join(failed...)
}

// dropEmpty drops the partitions of past days that hold nothing and are
// older than every retention period would keep (a late dead letter for a
// day dropped makes it again). A drop locks all of dead_letters for a
// moment; it never queues for that lock (migration 0051: NOWAIT, again
// for at most 300 ms), so no statement on dead_letters waits behind it:
// when a reader or a writer keeps the table for that long, it gives way
// (55P03) and the days left go at the next pass, as a busy day's purge
// does (retention).
func (k *Keeper) dropEmpty(ctx context.Context, conn *pgx.Conn, now time.Time) (int, error) {
	parts, err := listPartitions(ctx, conn)
	if err != nil {
		return 0, err
	}
	keepDays := 2 * 24 * time.Hour
	dropped := 0
	var failed []error // days whose drop failed for reasons of their own
	for _, p := range parts {
		if p.MaxID != 0 || !p.End().Before(now.Add(-keepDays)) {
			continue
		}
		var ok bool
		err := conn.QueryRow(ctx, `SELECT quarantine_dead_letter_partition_drop($1)`, p.Name).Scan(&ok)
		if isLockTimeout(err) || timedOut(ctx, err) {
			// The table is in use: so it likely is for the next day too.
			// (The drop tries for 300 ms: a statement timeout as short
			// ends it first.)
			k.gaveWayAgain(ctx, conn, "drop", p.Name, "partition keeper: dead_letters is busy; the empty past days are dropped at a later pass", err)
			return dropped, errors.Join(failed...)
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("drop partition %s: %w", p.Name, err))
			if passOver(ctx, conn) {
				break
			}
			continue // this day's own (a view depends on it, say): the others go on
		}
		k.wentThrough("drop", p.Name)
		if ok {
			dropped++
		}
	}
	return dropped, errors.Join(failed...)
}

func (k *Keeper) combos(ctx context.Context, conn *pgx.Conn) ([]DepthCount, error) {
	rows, err := conn.Query(ctx, selectSnapshotCombos)
	if err != nil {
		return nil, fmt.Errorf("read counters: %w", err)
	}
	cs, err := pgx.CollectRows(rows, scanDepth)
	if err != nil {
		return nil, fmt.Errorf("read counters: %w", err)
	}
	return cs, nil
}

// byBreakdown splits combos into parts of at most limit tenant and status
// pairs each, in their order.
func byBreakdown(combos []DepthCount, limit int) [][]DepthCount {
	var parts [][]DepthCount
	var part []DepthCount
	pairs := map[[2]string]bool{}
	for _, c := range combos {
		pair := [2]string{c.Tenant, string(c.Status)}
		if !pairs[pair] && len(pairs) == limit {
			parts, part, pairs = append(parts, part), nil, map[[2]string]bool{}
		}
		pairs[pair] = true
		part = append(part, c)
	}
	if len(part) > 0 {
		parts = append(parts, part)
	}
	return parts
}

// sqlState is PostgreSQL's code of err ("" when err carries none).
func sqlState(err error) string {
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) {
		return pgErr.SQLState()
	}
	return ""
}

// isLockTimeout reports whether err is lock_timeout ending a wait, or a
// lock not available at once (55P03).
func isLockTimeout(err error) bool { return sqlState(err) == "55P03" }

// gaveWay reports whether err ended a retention run that waited longer
// than it waits for a lock (setPurgeLockTimeout), or lost a deadlock to
// the transaction it waited for: nothing changed, and the run is tried
// again at the next pass; the pass goes on.
func gaveWay(err error) bool { return isLockTimeout(err) || sqlState(err) == "40P01" }

// timedOut reports whether err is a statement that outlasted the
// statement timeout (57014) while ctx is still going: a cancel of ctx
// (the console stopping) gives the same code, and is no give-way.
func timedOut(ctx context.Context, err error) bool {
	return ctx.Err() == nil && sqlState(err) == "57014"
}

// keeperMetrics are the keeper's series (docs/alerts.yml uses them).
type keeperMetrics struct {
	keys     prometheus.Counter
	removed  prometheus.Counter
	runs     *prometheus.CounterVec
	errors   prometheus.Counter
	behind   prometheus.Counter
	lastPass prometheus.Gauge
	stale    prometheus.Gauge
	ahead    prometheus.Gauge
}

func newKeeperMetrics(reg prometheus.Registerer) *keeperMetrics {
	m := &keeperMetrics{
		keys: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quarantine_retention_purged_keys_trimmed_total",
			Help: "Source keys of removed dead letters dropped because their messages are gone from their stream.",
		}),
		removed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quarantine_retention_removed_total",
			Help: "Dead letters removed by retention.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "quarantine_retention_runs_total",
			Help: "Retention runs (one transaction and one audit row each), by kind: day (a whole partition emptied) or rows (a bounded batch).",
		}, []string{"kind"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quarantine_partition_keeper_errors_total",
			Help: "Keeper passes (partitions ahead, retention) that failed.",
		}),
		behind: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "quarantine_retention_behind_total",
			Help: "Parts of retention (tenant and status pairs) left for a later pass because a run of theirs outlasted the statement timeout.",
		}),
		lastPass: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quarantine_partition_keeper_last_pass_timestamp_seconds",
			Help: "When a keeper pass of this console last completed (Unix time).",
		}),
		ahead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quarantine_partition_keeper_db_clock_ahead_seconds",
			Help: "How far the database's clock was ahead of this console's at its last keeper pass, when by more than a minute (0 otherwise): the pass then removed nothing by age.",
		}),
		stale: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "quarantine_retention_terms_stale",
			Help: "1 while this console's retention terms (its POLICY_FILE's [retention]) are not the active ones, as its last keeper pass found: it removes no dead letters; 0 while they are.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.keys, m.removed, m.runs, m.errors, m.behind, m.lastPass, m.stale, m.ahead)
	}
	return m
}

func (m *keeperMetrics) count(p KeeperPass) {
	for _, r := range p.Runs {
		m.removed.Add(float64(r.Rows))
		kind := "rows"
		if r.Partition != "" {
			kind = "day"
		}
		m.runs.WithLabelValues(kind).Inc()
	}
	m.keys.Add(float64(p.KeysTrimmed()))
	m.behind.Add(float64(p.Behind))
}
