package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// The active replay policy version lives in PostgreSQL
// (replay_policy_active), not in a process: every process judges by it.
const (
	selectActivePolicy = `SELECT version FROM replay_policy_active`
	// The version before, for the audit row; locked, so that two processes
	// starting together activate one after the other.
	selectActivePolicyLocked = `SELECT version FROM replay_policy_active FOR UPDATE`
	activatePolicy           = `INSERT INTO replay_policy_active (version, name, activated_by) VALUES ($1, $2, $3)
        ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, name = EXCLUDED.name,
            activated_by = EXCLUDED.activated_by, activated_at = now()
        WHERE replay_policy_active.version <> EXCLUDED.version` // a restart with the same table changes nothing
)

// ActivatePolicy makes the table in force the active one, as process
// (who started it, for the audit row): a process that starts with a policy
// file is the deploy that changes it. It changes nothing when the table is
// already active; otherwise it is audited with both versions.
func (s *Service) ActivatePolicy(ctx context.Context, process string) error {
	t := s.cfg.Policy()
	if t == nil {
		return nil
	}
	// One row, then the audit chain: no lock race to lose (pgx.BeginFunc,
	// not dlq.InTx).
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var before string
		if err := tx.QueryRow(ctx, selectActivePolicyLocked).Scan(&before); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		tag, err := tx.Exec(ctx, activatePolicy, t.Version(), t.Name(), process)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		e := audit.NewEvent(quarantine.Actor{Subject: "replay-policy:" + process}, quarantine.RequestMeta{}, audit.ActionReplayPolicy)
		e.ObjectType, e.ObjectID, e.Outcome = "replay_policy", t.Version(), audit.OutcomeOK
		e.Before, e.After = map[string]any{"version": before}, map[string]any{"version": t.Version(), "file": t.Name()}
		_, err = audit.Append(ctx, tx, e)
		return err
	})
	if err != nil {
		return fmt.Errorf("activate replay policy %s: %w", t.Version(), err)
	}
	return nil
}

// activeTable returns the table to judge by: the one in force when it is
// the active version (or none is recorded yet), else the policy file
// reloaded when that gives the active version. Otherwise it returns a
// conflict naming both versions: this process's rules are older (or other)
// than the ones every other process judges by, so it judges nothing.
func (s *Service) activeTable(ctx context.Context, q querier) (*replaypolicy.Table, error) {
	t := s.cfg.Policy()
	rows, err := q.Query(ctx, selectActivePolicy)
	if err != nil {
		return nil, fmt.Errorf("read the active replay policy: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	switch {
	case err != nil:
		return nil, fmt.Errorf("read the active replay policy: %w", err)
	case len(versions) == 0:
		return t, nil // none recorded yet: nothing to be stale against
	case t != nil && t.Version() == versions[0]:
		return t, nil
	}
	active := versions[0]
	if s.cfg.Reload != nil {
		if r, err := s.cfg.Reload(); err == nil && r.Version() == active {
			return r, nil
		}
	}
	mine := "none"
	if t != nil {
		mine = t.Version()
	}
	return nil, quarantine.Errorf(quarantine.ECONFLICT, "this process's replay policy (version %.12s) is not the active one (version %.12s), "+
		"and its policy file does not have it yet; nothing is judged here until it does", mine, active)
}
