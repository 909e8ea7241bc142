package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// The active replay policy version lives in PostgreSQL
// (replay_policy_active), not in a process: every process judges by it.
// Every version that was active is kept (replay_policy_versions), so that
// one replaced since is not made active again by a process that merely
// restarts with an older file.
const (
	selectActivePolicy = `SELECT version, name, activated_at, activated_by FROM replay_policy_active`
	// Whether the version was active before ($1), and whether another one
	// replaced it since: a process starting with a replaced version's file
	// is an older rollout restarting, not a deploy.
	selectPolicyVersion = `SELECT superseded_at IS NOT NULL FROM replay_policy_versions WHERE version = $1`
	activatePolicy      = `INSERT INTO replay_policy_active (version, name, activated_by) VALUES ($1, $2, $3)
        ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, name = EXCLUDED.name,
            activated_by = EXCLUDED.activated_by, activated_at = now()
        WHERE replay_policy_active.version <> EXCLUDED.version` // a restart with the same table changes nothing
	// Every other version still marked in force is replaced by this one
	// (replay_policy_versions_one_in_force allows one).
	supersedePolicies = `UPDATE replay_policy_versions SET superseded_at = now(), superseded_by = $2
        WHERE version <> $1 AND superseded_at IS NULL`
	recordPolicyVersion = `INSERT INTO replay_policy_versions (version, name, activated_by) VALUES ($1, $2, $3)
        ON CONFLICT (version) DO UPDATE SET name = EXCLUDED.name, activated_at = now(),
            activated_by = EXCLUDED.activated_by, superseded_at = NULL, superseded_by = ''`
)

// PolicyActivation is the active replay policy version: the one every
// process judges by, the file it came from, and when and by which process
// (host-pid) it was made active.
type PolicyActivation struct {
	Version     string // "" when none is recorded yet
	File        string
	ActivatedAt time.Time
	ActivatedBy string
}

// PolicyStanding is how this process's replay policy stands against the
// active one.
type PolicyStanding struct {
	Table  *replaypolicy.Table // the table in force in this process
	Active PolicyActivation
	// FileErr is why the policy file could not be read again when it was
	// read for the active version (nil when it was, or was not read).
	FileErr error
	// Rollback is the last rollback allowance, whatever became of it (nil
	// when none was ever made); PolicyStanding reads it, the checks before
	// each claim do not.
	Rollback *PolicyRollback
	// Retention is how the table's retention terms stand against the
	// active ones; PolicyStanding reads it, the checks before each claim
	// do not.
	Retention RetentionStanding
}

// Stale reports whether this process's table is not the active version:
// it then submits, approves and replays nothing (it serves replay
// read-only) until its policy file has the active version.
func (p PolicyStanding) Stale() bool {
	return p.Active.Version != "" && (p.Table == nil || p.Table.Version() != p.Active.Version)
}

// Version is the version of this process's table ("none" without one).
func (p PolicyStanding) Version() string {
	if p.Table == nil {
		return "none"
	}
	return p.Table.Version()
}

// ActivatePolicy makes the table in force the active one, as process
// (host-pid, for the audit row): a process that starts with a policy file
// is the deploy that changes it. It changes nothing when the table is
// already active, and nothing when its version was active before and
// another replaced it since: the process is an older rollout restarting
// (a crash, a rescheduled replica), and it serves replay read-only
// (PolicyStanding.Stale). Going back to such a version is a deliberate
// rollback: the allowance AllowPolicyRollback makes lets this one
// activation through while it lasts, and the activation uses it up. Any
// activation ends an allowance for another version. The audit row names
// both versions, and a rollback the allowance it used. The table's
// retention terms, which are not part of its version, are activated in
// the same transaction by the same rule, as versions of their own
// (activateRetention): the keeper of a process whose terms were replaced
// removes nothing. What the versions say (their canonical texts) is
// recorded in the same transaction when they are the active ones, newly
// or already (PolicyContent, TermsContent).
func (s *Service) ActivatePolicy(ctx context.Context, process string) error {
	t := s.cfg.Policy()
	if t == nil {
		return nil
	}
	// The lock, then the versions and the audit chain: no lock race to
	// lose (pgx.BeginFunc, not dlq.InTx).
	var shortened []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		shortened = nil // a retried transaction decides afresh
		if _, err := tx.Exec(ctx, lockPolicyChange); err != nil {
			return err
		}
		// Whether the terms change is decided, and the retention runs
		// under way waited for, before the rules' audit row takes the
		// chain's lock, which a run waits for while it holds the terms
		// lock.
		terms, err := retentionActivation(ctx, tx, t)
		if err != nil {
			return err
		}
		if err := activateRules(ctx, tx, t, process); err != nil {
			return err
		}
		if err := terms.activate(ctx, tx, t, process); err != nil {
			return err
		}
		shortened = terms.Shortened
		return recordContents(ctx, tx, t, process)
	})
	if err != nil {
		return fmt.Errorf("activate replay policy %s: %w", t.Version(), err)
	}
	s.shortened.Store(&shortened)
	return nil
}

// ShortenedTerms is where the retention terms the last ActivatePolicy of
// this service made active keep dead letters a shorter time than the
// terms they replaced (the audit row says so too): the keeper removes by
// them at its next pass, so a start says it loudly. Nil when that
// activation changed no terms, or shortened nothing.
func (s *Service) ShortenedTerms() []string {
	if p := s.shortened.Load(); p != nil {
		return *p
	}
	return nil
}

// activateRules is ActivatePolicy's part for the rules (the table's
// Version), in tx under lockPolicyChange.
func activateRules(ctx context.Context, tx pgx.Tx, t *replaypolicy.Table, process string) error {
	before, err := activePolicy(ctx, tx)
	if err != nil || before.Version == t.Version() {
		return err
	}
	var superseded bool
	err = tx.QueryRow(ctx, selectPolicyVersion, t.Version()).Scan(&superseded)
	wasActive := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	var allowance *PolicyRollback
	if superseded {
		if allowance, err = readPolicyRollback(ctx, tx); err != nil {
			return err
		}
		if !allowance.Pending() || allowance.Version != t.Version() {
			return nil // replaced since it was active, and no rollback to it allowed now: a restart never takes it back
		}
	}
	tag, err := tx.Exec(ctx, activatePolicy, t.Version(), t.Name(), process)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	if _, err := tx.Exec(ctx, supersedePolicies, t.Version(), process); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, recordPolicyVersion, t.Version(), t.Name(), process); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, endPolicyRollback, t.Version(), process); err != nil {
		return err
	}
	e := audit.NewEvent(quarantine.Actor{Subject: "replay-policy:" + process}, quarantine.RequestMeta{}, audit.ActionReplayPolicy)
	e.ObjectType, e.ObjectID, e.Outcome = "replay_policy", t.Version(), audit.OutcomeOK
	e.Before = map[string]any{"version": before.Version}
	after := map[string]any{"version": t.Version(), "file": t.Name(), "rollback": wasActive}
	if allowance != nil {
		after["rollback_allowance"] = map[string]any{"audit_seq": allowance.AuditSeq, "allowed_by": allowance.AllowedBy,
			"expires_at": allowance.ExpiresAt.UTC().Format(time.RFC3339Nano)}
	}
	e.After = after
	_, err = audit.Append(ctx, tx, e)
	return err
}

// activePolicy reads the active version; its Version is "" when none is
// recorded yet.
func activePolicy(ctx context.Context, q querier) (PolicyActivation, error) {
	var a PolicyActivation
	err := q.QueryRow(ctx, selectActivePolicy).Scan(&a.Version, &a.File, &a.ActivatedAt, &a.ActivatedBy)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return a, fmt.Errorf("read the active replay policy: %w", err)
	}
	return a, nil
}

// PolicyStanding returns how this process's replay policy stands against
// the active one, reading the policy file again first when it is not the
// active version (as a worker does before it claims).
func (s *Service) PolicyStanding(ctx context.Context) (PolicyStanding, error) {
	st, err := s.standing(ctx, s.pool)
	if err != nil {
		return st, err
	}
	if st.Rollback, err = readPolicyRollback(ctx, s.pool); err != nil {
		return st, err
	}
	if st.Table != nil {
		st.Retention.Version = RetentionVersion(st.Table.Retention())
	}
	st.Retention.Active, err = dlq.ActiveTerms(ctx, s.pool)
	return st, err
}

// RollbackHint says, for a process whose table is not the active version,
// how its version comes back if that is what the operator wants: a
// rollback allowed to it and still waiting (it is activated at this
// process's next start), one that expired unused (allow it again), or none
// ("" when the process is not stale). A start refused for an expired
// allowance logs it.
func (p PolicyStanding) RollbackHint() string {
	if !p.Stale() {
		return ""
	}
	v, r := p.Version(), p.Rollback
	switch {
	case r != nil && r.Version == v && r.Pending():
		return fmt.Sprintf("a rollback to version %.12s is allowed until %s: restart this process to activate it",
			v, r.ExpiresAt.UTC().Format(time.RFC3339))
	case r != nil && r.Version == v && r.Expired:
		return fmt.Sprintf("the rollback to version %.12s that %s allowed expired unused at %s, so this start did not activate it; "+
			"to go back to it, run `console policy rollback --to %.12s --reason TEXT` again, then restart this process",
			v, r.AllowedBy, r.ExpiresAt.UTC().Format(time.RFC3339), v)
	}
	return fmt.Sprintf("a version replaced since it was active comes back only by a deliberate rollback: "+
		"`console policy rollback --to %.12s --reason TEXT`, then restart this process within the hour (docs/runbook.md)", v)
}

// standing is PolicyStanding on q. A process whose table is not the
// active version reads its policy file again (Config.Reload): the deploy
// may have reached it since.
func (s *Service) standing(ctx context.Context, q querier) (PolicyStanding, error) {
	active, err := activePolicy(ctx, q)
	if err != nil {
		return PolicyStanding{}, err
	}
	st := PolicyStanding{Table: s.cfg.Policy(), Active: active}
	if !st.Stale() || s.cfg.Reload == nil {
		return st, nil
	}
	if st.Table, err = s.cfg.Reload(); err != nil {
		st.Table, st.FileErr = s.cfg.Policy(), err // the table in force stays
	}
	return st, nil
}

// activeTable returns the table to judge by: the one in force when it is
// the active version (or none is recorded yet), else the policy file
// reloaded when that gives the active version. Otherwise it returns a
// conflict naming both versions: this process's rules are older (or other)
// than the ones every other process judges by, so it judges nothing.
func (s *Service) activeTable(ctx context.Context, q querier) (*replaypolicy.Table, error) {
	st, err := s.standing(ctx, q)
	if err != nil {
		return nil, err
	}
	if st.Stale() {
		return nil, st.conflict()
	}
	return st.Table, nil
}

// conflict is the refusal of a process whose table is not the active
// version, naming both versions and when and by whom the active one was
// made so.
func (p PolicyStanding) conflict() error {
	file := "its policy file does not have it yet"
	if p.FileErr != nil {
		file = "its policy file could not be read again (the log says why)"
	}
	return quarantine.Errorf(quarantine.ECONFLICT, "this process's replay policy (version %.12s) is not the active one (version %.12s, active since %s, activated by %s), "+
		"and %s; nothing is judged here until it does", p.Version(), p.Active.Version,
		p.Active.ActivatedAt.UTC().Format(time.RFC3339), p.Active.ActivatedBy, file)
}

// PolicyCollector exports quarantine_replay_policy_stale: 1 while this
// process's replay policy is not the active version (it submits, approves
// and replays nothing), 0 while it is.
type PolicyCollector struct {
	svc   *Service
	log   *slog.Logger
	stale *prometheus.Desc
}

// NewPolicyCollector returns a collector asking svc.
func NewPolicyCollector(svc *Service, log *slog.Logger) *PolicyCollector {
	return &PolicyCollector{svc: svc, log: log, stale: prometheus.NewDesc("quarantine_replay_policy_stale",
		"1 while this process's replay policy (its POLICY_FILE) is not the active version: it submits, approves and replays nothing; 0 while it is.", nil, nil)}
}

// Describe implements prometheus.Collector.
func (c *PolicyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.stale }

// Collect implements prometheus.Collector. A database error is logged and
// the series is left out of this scrape.
func (c *PolicyCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := c.svc.PolicyStanding(ctx)
	if err != nil {
		c.log.Warn("replay policy metric", "err", err)
		return
	}
	v := 0.0
	if st.Stale() {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(c.stale, prometheus.GaugeValue, v)
}

// Voids reports whether a request made under version no longer counts:
// it was made under another version than the active one (than this
// process's table, while none is recorded).
func (p PolicyStanding) Voids(version string) bool {
	if p.Active.Version != "" {
		return version != p.Active.Version
	}
	return p.Table.Stale(version)
}
