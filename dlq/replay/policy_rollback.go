package replay

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// txStarter starts transactions: a pool or a connection.
type txStarter interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// PolicyVersion is a replay policy version that was active, as
// replay_policy_versions keeps it.
type PolicyVersion struct {
	Version      string
	File         string
	ActivatedAt  time.Time
	SupersededAt *time.Time // nil: active, or let be activated again
}

const (
	// A version by its full name or the start of it (as pages and logs
	// show it, 12 characters), locked.
	selectPolicyVersionsLike = `SELECT version, name, activated_at, superseded_at FROM replay_policy_versions
        WHERE starts_with(version, $1) ORDER BY version LIMIT 2 FOR UPDATE`
	allowPolicyVersion = `UPDATE replay_policy_versions SET superseded_at = NULL, superseded_by = '' WHERE version = $1`
)

// AllowPolicyRollback lets replaced replay policy version (its full name
// or a start of it naming one version) be made active again by the next
// process that starts with its file: a deliberate rollback, which a
// process restarting with an older file never is (ActivatePolicy). It
// writes the audit row of actor, with reason, in the same transaction,
// and returns the version. A version that is active, or was never active,
// needs nothing and is refused with a conflict saying so.
func AllowPolicyRollback(ctx context.Context, db txStarter, version string, actor quarantine.Actor, reason string) (PolicyVersion, error) {
	version, reason = strings.TrimSpace(version), strings.TrimSpace(reason)
	switch {
	case len(version) < 8:
		return PolicyVersion{}, quarantine.Errorf(quarantine.EINVALID, "give at least the first 8 characters of the version (the Policy page and the logs show 12)")
	case reason == "":
		return PolicyVersion{}, quarantine.Errorf(quarantine.EINVALID, "say why the policy goes back (--reason): it is recorded in the audit log")
	}
	var v PolicyVersion
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, selectPolicyVersionsLike, version)
		if err != nil {
			return err
		}
		found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PolicyVersion, error) {
			var p PolicyVersion
			return p, r.Scan(&p.Version, &p.File, &p.ActivatedAt, &p.SupersededAt)
		})
		switch {
		case err != nil:
			return err
		case len(found) == 0:
			return quarantine.Errorf(quarantine.ENOTFOUND, "no replay policy version starting %q was ever active: deploy its file, a plain deploy activates it", version)
		case len(found) > 1:
			return quarantine.Errorf(quarantine.EINVALID, "more than one replay policy version starts %q: give more of it", version)
		case found[0].SupersededAt == nil:
			return quarantine.Errorf(quarantine.ECONFLICT, "replay policy version %.12s is not replaced: it is active, or was let be activated again already", found[0].Version)
		}
		v = found[0]
		if _, err := tx.Exec(ctx, allowPolicyVersion, v.Version); err != nil {
			return err
		}
		e := audit.NewEvent(actor, quarantine.RequestMeta{}, audit.ActionReplayPolicyRollback)
		e.ObjectType, e.ObjectID, e.Outcome, e.Reason = "replay_policy", v.Version, audit.OutcomeOK, reason
		e.Before = map[string]any{"superseded_at": v.SupersededAt.UTC().Format(time.RFC3339Nano)}
		e.After = map[string]any{"superseded_at": nil, "file": v.File}
		_, err = audit.Append(ctx, tx, e)
		return err
	})
	if err != nil {
		return PolicyVersion{}, fmt.Errorf("allow replay policy %s again: %w", version, err)
	}
	v.SupersededAt = nil
	return v, nil
}
