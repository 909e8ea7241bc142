package replay

import (
	"context"
	"errors"
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

// How long a rollback allowance lasts: DefaultRollbackFor unless the
// operator says (console policy rollback --for), from MinRollbackFor to
// MaxRollbackFor. It is bounded so that a permission nobody used does not
// wait for an old replica to restart with that version's file months later.
const (
	DefaultRollbackFor = time.Hour
	MinRollbackFor     = time.Minute
	MaxRollbackFor     = 24 * time.Hour
)

// PolicyVersion is a replay policy version that was active, as
// replay_policy_versions keeps it.
type PolicyVersion struct {
	Version      string
	File         string
	ActivatedAt  time.Time
	SupersededAt *time.Time // nil: the active version
}

// PolicyRollback is the last rollback allowance (replay_policy_rollback):
// the first process that starts with Version's file before ExpiresAt makes
// it active again, once.
type PolicyRollback struct {
	Version   string
	File      string // the file the version was last active from
	AllowedAt time.Time
	AllowedBy string // the operator, as the audit entry AuditSeq names them
	AuditSeq  int64
	ExpiresAt time.Time
	// EndedAt is when the allowance ended before it expired: Used by the
	// process EndedBy names, which activated Version, or ended by
	// EndedBy's activation of another version. nil while it lasts.
	EndedAt *time.Time
	EndedBy string
	Used    bool
	// Expired: ExpiresAt passed (by PostgreSQL's clock) before anything
	// ended it; a start with Version's file is then refused as before.
	Expired bool
	// Terms: an allowance for retention terms (RetentionVersion), not
	// for a replay policy version.
	Terms bool
}

// Pending reports whether the allowance still lets its version be
// activated.
func (r *PolicyRollback) Pending() bool {
	return r != nil && r.Version != "" && r.EndedAt == nil && !r.Expired
}

// Every change of the active version (an activation, a rollback allowance)
// takes lockPolicyChange for its transaction, so that they run one after
// the other even when no version is recorded yet (no row to lock). A
// transaction that acts on the active version it reads (VoidStale) takes
// lockPolicyRead: no activation commits between its read and its commit.
// Plain reads take neither and are not held up.
const (
	lockPolicyChange = `LOCK TABLE replay_policy_active IN SHARE ROW EXCLUSIVE MODE`
	lockPolicyRead   = `LOCK TABLE replay_policy_active IN SHARE MODE`
)

const (
	// A version by its full name or the start of it (as pages and logs
	// show it, 12 characters).
	selectPolicyVersionsLike = `SELECT version, name, activated_at, superseded_at FROM replay_policy_versions
        WHERE starts_with(version, $1) ORDER BY version LIMIT 2`
	selectPolicyRollback = `SELECT r.version, v.name, r.allowed_at, r.allowed_by, r.audit_seq, r.expires_at, r.ended_at, r.ended_by, r.used,
            r.ended_at IS NULL AND r.expires_at <= now()
        FROM replay_policy_rollback r JOIN replay_policy_versions v USING (version)`
	// A newer allowance replaces the one before, whatever its state.
	allowPolicyRollback = `INSERT INTO replay_policy_rollback (version, allowed_by, audit_seq, expires_at) VALUES ($1, $2, $3, $4)
        ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, allowed_at = now(), allowed_by = EXCLUDED.allowed_by,
            audit_seq = EXCLUDED.audit_seq, expires_at = EXCLUDED.expires_at, ended_at = NULL, ended_by = '', used = false`
	// An activation ends the allowance that lasts: it used it when it
	// activated the allowed version ($1), else another version came in
	// the meantime and the operator's reason no longer holds. An expired
	// one is left expired.
	endPolicyRollback = `UPDATE replay_policy_rollback SET ended_at = now(), ended_by = $2, used = (version = $1)
        WHERE ended_at IS NULL AND expires_at > now()`
)

// AllowPolicyRollback lets replaced replay policy version (its full name
// or a start of it naming one version), or replaced retention terms by
// their version (RetentionVersion), be made active again by the first
// process that starts with its file within d (0: DefaultRollbackFor;
// from MinRollbackFor to MaxRollbackFor): a deliberate rollback, which a
// process restarting with an older file never is (ActivatePolicy). The
// allowance is used by that one activation, and ends when another version
// is activated first or another allowance is made; an allowance waiting
// for another version is replaced by this one. It writes the audit row of
// actor, with reason, in the same transaction, and returns the allowance.
// The active version, one never active and one allowed already (and not
// expired) are refused: not found, invalid or conflict, saying so.
func AllowPolicyRollback(ctx context.Context, db txStarter, version string, d time.Duration, actor quarantine.Actor, reason string) (PolicyRollback, error) {
	version, reason = strings.TrimSpace(version), strings.TrimSpace(reason)
	if d == 0 {
		d = DefaultRollbackFor
	}
	switch {
	case len(version) < 8:
		return PolicyRollback{}, quarantine.Errorf(quarantine.EINVALID, "give at least the first 8 characters of the version (the Policy page and the logs show 12)")
	case reason == "":
		return PolicyRollback{}, quarantine.Errorf(quarantine.EINVALID, "say why the policy goes back (--reason): it is recorded in the audit log")
	case d < MinRollbackFor || d > MaxRollbackFor:
		return PolicyRollback{}, quarantine.Errorf(quarantine.EINVALID, "a rollback may be allowed for %s to %s (--for), not %s: start the process with the version's file within it",
			MinRollbackFor, MaxRollbackFor, d)
	}
	var r PolicyRollback
	what := "version" // what version names, once known: for the error
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockPolicyChange); err != nil {
			return err
		}
		// Retention terms have versions of their own (RetentionVersion):
		// the same command lets replaced ones back.
		found, terms, err := versionsStarting(ctx, tx, version)
		switch {
		case err != nil:
			return err
		case len(found)+len(terms) == 0:
			return quarantine.Errorf(quarantine.ENOTFOUND, "no replay policy version or retention terms version starting %q was ever active: deploy its file, a plain deploy activates it", version)
		case len(found)+len(terms) > 1:
			return quarantine.Errorf(quarantine.EINVALID, "more than one replay policy or retention terms version starts %q: give more of it", version)
		case len(terms) == 1:
			what = "retention terms"
			r, err = allowRetentionRollbackTx(ctx, tx, terms[0], d, actor, reason)
			return err
		}
		what = "replay policy"
		switch {
		case found[0].SupersededAt == nil:
			return quarantine.Errorf(quarantine.ECONFLICT, "replay policy version %.12s is the active one: there is nothing to go back to", found[0].Version)
		}
		v := found[0]
		before, err := readPolicyRollback(ctx, tx)
		if err != nil {
			return err
		}
		if before.Pending() && before.Version == v.Version {
			return quarantine.Errorf(quarantine.ECONFLICT, "a rollback to replay policy version %.12s is allowed already, until %s: start a process with its file",
				v.Version, before.ExpiresAt.UTC().Format(time.RFC3339))
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		r = PolicyRollback{Version: v.Version, File: v.File, AllowedAt: now, AllowedBy: actor.Subject, ExpiresAt: now.Add(d)}
		e := audit.NewEvent(actor, quarantine.RequestMeta{}, audit.ActionReplayPolicyRollback)
		e.ObjectType, e.ObjectID, e.Outcome, e.Reason = "replay_policy", v.Version, audit.OutcomeOK, reason
		was := map[string]any{"superseded_at": v.SupersededAt.UTC().Format(time.RFC3339Nano)}
		if before.Pending() {
			was["allowed_rollback"] = before.Version // replaced by this one
		}
		e.Before = was
		e.After = map[string]any{"file": v.File, "expires_at": r.ExpiresAt.UTC().Format(time.RFC3339Nano)}
		entry, err := audit.Append(ctx, tx, e)
		if err != nil {
			return err
		}
		r.AuditSeq = entry.Seq
		_, err = tx.Exec(ctx, allowPolicyRollback, r.Version, r.AllowedBy, r.AuditSeq, r.ExpiresAt)
		return err
	})
	if err != nil {
		return PolicyRollback{}, fmt.Errorf("allow %s %s again: %w", what, version, err)
	}
	return r, nil
}

// PolicyStatus returns the active replay policy version (Version "" when
// none is recorded yet) and the last rollback allowance (nil when none was
// ever made), as "console policy status" shows them.
func PolicyStatus(ctx context.Context, q querier) (PolicyActivation, *PolicyRollback, error) {
	active, err := activePolicy(ctx, q)
	if err != nil {
		return PolicyActivation{}, nil, err
	}
	r, err := readPolicyRollback(ctx, q)
	return active, r, err
}

// readPolicyRollback returns the last rollback allowance, nil when none
// was ever made.
func readPolicyRollback(ctx context.Context, q querier) (*PolicyRollback, error) {
	return readRollback(ctx, q, selectPolicyRollback, "replay policy")
}

// readRollback reads the allowance sql selects (selectPolicyRollback or
// selectRetentionRollback), nil when none was ever made; what names its
// kind in an error.
func readRollback(ctx context.Context, q querier, sql, what string) (*PolicyRollback, error) {
	var r PolicyRollback
	err := q.QueryRow(ctx, sql).Scan(&r.Version, &r.File, &r.AllowedAt, &r.AllowedBy, &r.AuditSeq,
		&r.ExpiresAt, &r.EndedAt, &r.EndedBy, &r.Used, &r.Expired)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the %s rollback allowance: %w", what, err)
	}
	return &r, nil
}

// versionsStarting returns the replay policy versions and the retention
// terms versions that were ever active and whose names start with prefix
// (two of each at most: enough to tell one from several), as rollback
// and show name a version.
func versionsStarting(ctx context.Context, q querier, prefix string) (policy, terms []PolicyVersion, err error) {
	if policy, err = versionsLike(ctx, q, selectPolicyVersionsLike, prefix); err != nil {
		return nil, nil, err
	}
	terms, err = versionsLike(ctx, q, selectRetentionVersionsLike, prefix)
	return policy, terms, err
}

// versionsLike returns the versions sql selects starting with prefix
// (selectPolicyVersionsLike or selectRetentionVersionsLike: two at most).
func versionsLike(ctx context.Context, q querier, sql, prefix string) ([]PolicyVersion, error) {
	rows, err := q.Query(ctx, sql, prefix)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (PolicyVersion, error) {
		var p PolicyVersion
		return p, r.Scan(&p.Version, &p.File, &p.ActivatedAt, &p.SupersededAt)
	})
}
