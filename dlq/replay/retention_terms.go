package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Audit actions of retention terms versions (migration 0035).
const (
	// ActionRetentionTerms: a process made its policy file's retention
	// terms the active ones (a deploy, or a rollback an allowance let
	// through).
	ActionRetentionTerms = audit.ActionRetentionTerms
	// ActionRetentionTermsRollback: an operator let replaced retention
	// terms be made active again by the next start with them.
	ActionRetentionTermsRollback = audit.ActionRetentionTermsRollback
)

// RetentionVersion returns the version of retention terms r: the hex
// SHA-256 of their canonical text (replaypolicy.Retention.Canonical: the
// defaults in force, then the section's periods and every rule's, in
// order; keys sorted, periods exact). It is not the rules' Version (a
// retention change voids no replay request), and the keeper removes dead
// letters by terms only while their version is the active one (dlq.Terms).
func RetentionVersion(r *replaypolicy.Retention) string {
	sum := sha256.Sum256([]byte(r.Canonical()))
	return hex.EncodeToString(sum[:])
}

// Retention terms versions, as replay_policy_versions keeps the rules':
// the one not superseded is active (retention_terms_versions_one_in_force).
const (
	selectRetentionVersion = `SELECT superseded_at IS NOT NULL FROM retention_terms_versions WHERE version = $1`
	// The terms in force are replaced by these ($1).
	supersedeRetention = `UPDATE retention_terms_versions SET superseded_at = now(), superseded_by = $2
        WHERE version <> $1 AND superseded_at IS NULL`
	recordRetention = `INSERT INTO retention_terms_versions (version, name, activated_by) VALUES ($1, $2, $3)
        ON CONFLICT (version) DO UPDATE SET name = EXCLUDED.name, activated_at = now(),
            activated_by = EXCLUDED.activated_by, superseded_at = NULL, superseded_by = ''`
	selectRetentionVersionsLike = `SELECT version, name, activated_at, superseded_at FROM retention_terms_versions
        WHERE starts_with(version, $1) ORDER BY version LIMIT 2`
	selectRetentionRollback = `SELECT r.version, v.name, r.allowed_at, r.allowed_by, r.audit_seq, r.expires_at, r.ended_at, r.ended_by, r.used,
            r.ended_at IS NULL AND r.expires_at <= now()
        FROM retention_terms_rollback r JOIN retention_terms_versions v USING (version)`
	allowRetentionRollback = `INSERT INTO retention_terms_rollback (version, allowed_by, audit_seq, expires_at) VALUES ($1, $2, $3, $4)
        ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version, allowed_at = now(), allowed_by = EXCLUDED.allowed_by,
            audit_seq = EXCLUDED.audit_seq, expires_at = EXCLUDED.expires_at, ended_at = NULL, ended_by = '', used = false`
	// As endPolicyRollback: an activation uses the allowance for its
	// terms ($1), or ends one for other terms.
	endRetentionRollback = `UPDATE retention_terms_rollback SET ended_at = now(), ended_by = $2, used = (version = $1)
        WHERE ended_at IS NULL AND expires_at > now()`
)

// termsChange is what activateRetention decided: nothing (Version ""), or
// to make Version active, as a rollback the allowance lets through when
// it is not nil.
type termsChange struct {
	Version   string
	Before    dlq.TermsActivation
	WasActive bool
	Allowance *PolicyRollback
	// Shortened is where the terms keep dead letters a shorter time than
	// the terms they replace (replaypolicy.Retention.Shortened), as far as
	// what those said was recorded.
	Shortened []string
}

// retentionActivation decides, in tx under lockPolicyChange, whether t's
// retention terms become the active ones, by the rule of the rules'
// versions: terms never active do (a deploy); terms replaced since they
// were active do not (an older replica restarting), unless a rollback
// allowance for them waits. When they do, it waits for the retention runs
// under way (dlq.LockTermsChange), which then wait for tx.
func retentionActivation(ctx context.Context, tx pgx.Tx, t *replaypolicy.Table) (termsChange, error) {
	v := RetentionVersion(t.Retention())
	before, err := dlq.ActiveTerms(ctx, tx)
	if err != nil || before.Version == v {
		return termsChange{}, err
	}
	var superseded bool
	err = tx.QueryRow(ctx, selectRetentionVersion, v).Scan(&superseded)
	wasActive := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return termsChange{}, fmt.Errorf("read retention terms %.12s: %w", v, err)
	}
	var allowance *PolicyRollback
	if superseded {
		if allowance, err = readRetentionRollback(ctx, tx); err != nil {
			return termsChange{}, err
		}
		if !allowance.Pending() || allowance.Version != v {
			return termsChange{}, nil // replaced since: a restart never takes them back
		}
	}
	if err := dlq.LockTermsChange(ctx, tx); err != nil {
		return termsChange{}, err
	}
	shortened, err := shortenedFrom(ctx, tx, before.Version, t.Retention())
	if err != nil {
		return termsChange{}, err
	}
	return termsChange{Version: v, Before: before, WasActive: wasActive, Allowance: allowance, Shortened: shortened}, nil
}

// shortenedFrom is where terms keep dead letters a shorter time than the
// terms of version before said, as recorded (retention_terms_contents);
// nil when there were none, or what they said was not recorded (a
// version active before migration 0039) or no longer reads.
func shortenedFrom(ctx context.Context, tx pgx.Tx, before string, terms *replaypolicy.Retention) ([]string, error) {
	if before == "" {
		return nil, nil
	}
	var text string
	err := tx.QueryRow(ctx, `SELECT content FROM retention_terms_contents WHERE version = $1`, before).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read retention terms %.12s: %w", before, err)
	}
	old, err := replaypolicy.ParseRetentionCanonical(text)
	if err != nil {
		return nil, nil // recorded by another format: nothing to compare
	}
	return terms.Shortened(old), nil
}

// activate makes c's terms the active ones and writes the audit row, as
// process; it does nothing when c decided nothing.
func (c termsChange) activate(ctx context.Context, tx pgx.Tx, t *replaypolicy.Table, process string) error {
	if c.Version == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, supersedeRetention, c.Version, process); err != nil {
		return fmt.Errorf("activate retention terms %.12s: %w", c.Version, err)
	}
	if _, err := tx.Exec(ctx, recordRetention, c.Version, t.Name(), process); err != nil {
		return fmt.Errorf("activate retention terms %.12s: %w", c.Version, err)
	}
	if _, err := tx.Exec(ctx, endRetentionRollback, c.Version, process); err != nil {
		return fmt.Errorf("activate retention terms %.12s: %w", c.Version, err)
	}
	e := audit.NewEvent(quarantine.Actor{Subject: "replay-policy:" + process}, quarantine.RequestMeta{}, ActionRetentionTerms)
	e.ObjectType, e.ObjectID, e.Outcome = "retention_terms", c.Version, audit.OutcomeOK
	e.Before = map[string]any{"version": c.Before.Version}
	after := map[string]any{"version": c.Version, "file": t.Name(), "rollback": c.WasActive, "terms": t.Retention().Canonical()}
	if len(c.Shortened) > 0 {
		after["shortened"] = c.Shortened
	}
	if a := c.Allowance; a != nil {
		after["rollback_allowance"] = map[string]any{"audit_seq": a.AuditSeq, "allowed_by": a.AllowedBy,
			"expires_at": a.ExpiresAt.UTC().Format(time.RFC3339Nano)}
	}
	e.After = after
	_, err := audit.Append(ctx, tx, e)
	return err
}

// readRetentionRollback returns the last retention terms rollback
// allowance, nil when none was ever made.
func readRetentionRollback(ctx context.Context, q querier) (*PolicyRollback, error) {
	r, err := readRollback(ctx, q, selectRetentionRollback, "retention terms")
	if r != nil {
		r.Terms = true
	}
	return r, err
}

// RetentionStatus is "console policy status" for retention terms: the
// active terms and the last rollback allowance for terms, nil when none
// was ever made.
func RetentionStatus(ctx context.Context, q querier) (dlq.TermsActivation, *PolicyRollback, error) {
	active, err := dlq.ActiveTerms(ctx, q)
	if err != nil {
		return dlq.TermsActivation{}, nil, err
	}
	r, err := readRetentionRollback(ctx, q)
	return active, r, err
}

// allowRetentionRollbackTx is AllowPolicyRollback for replaced retention
// terms v, in tx under lockPolicyChange: the allowance, audited.
func allowRetentionRollbackTx(ctx context.Context, tx pgx.Tx, v PolicyVersion, d time.Duration, actor quarantine.Actor, reason string) (PolicyRollback, error) {
	if v.SupersededAt == nil {
		return PolicyRollback{}, quarantine.Errorf(quarantine.ECONFLICT, "retention terms %.12s are the active ones: there is nothing to go back to", v.Version)
	}
	before, err := readRetentionRollback(ctx, tx)
	if err != nil {
		return PolicyRollback{}, err
	}
	if before.Pending() && before.Version == v.Version {
		return PolicyRollback{}, quarantine.Errorf(quarantine.ECONFLICT, "a rollback to retention terms %.12s is allowed already, until %s: start a process with their file",
			v.Version, before.ExpiresAt.UTC().Format(time.RFC3339))
	}
	var now time.Time
	if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return PolicyRollback{}, err
	}
	r := PolicyRollback{Version: v.Version, File: v.File, AllowedAt: now, AllowedBy: actor.Subject, ExpiresAt: now.Add(d), Terms: true}
	e := audit.NewEvent(actor, quarantine.RequestMeta{}, ActionRetentionTermsRollback)
	e.ObjectType, e.ObjectID, e.Outcome, e.Reason = "retention_terms", v.Version, audit.OutcomeOK, reason
	was := map[string]any{"superseded_at": v.SupersededAt.UTC().Format(time.RFC3339Nano)}
	if before.Pending() {
		was["allowed_rollback"] = before.Version // replaced by this one
	}
	e.Before = was
	e.After = map[string]any{"file": v.File, "expires_at": r.ExpiresAt.UTC().Format(time.RFC3339Nano)}
	entry, err := audit.Append(ctx, tx, e)
	if err != nil {
		return PolicyRollback{}, err
	}
	r.AuditSeq = entry.Seq
	_, err = tx.Exec(ctx, allowRetentionRollback, r.Version, r.AllowedBy, r.AuditSeq, r.ExpiresAt)
	return r, err
}

// RetentionStanding is how this process's retention terms stand against
// the active ones.
type RetentionStanding struct {
	Version string // this process's terms ("" without a table)
	Active  dlq.TermsActivation
}

// Stale reports whether this process's terms are not the active ones: its
// keeper removes no dead letters.
func (r RetentionStanding) Stale() bool { return r.Active.Stale(r.Version) }
