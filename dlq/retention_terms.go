package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Retention terms have versions of their own (retention_terms_versions,
// migration 0035), apart from the replay policy's: changing how long dead
// letters are kept voids no replay request, but only one set of terms
// governs what goes. A process that starts with terms never active makes
// them the active ones (a deploy, replay.Service.ActivatePolicy); a
// process whose terms were replaced since, an older replica restarting or
// one whose policy file was not rolled, removes nothing (Keeper), however
// much shorter its terms are, and does not take them back: going back is
// a deliberate rollback (console policy rollback --to VERSION).

// Terms are retention terms with their version, the hash of what they
// keep how long (replay.RetentionVersion). The keeper removes dead letters
// by them only while Version is the active terms' (or none is recorded
// yet, as on a database no process has started on since migration 0035).
type Terms struct {
	RetentionPolicy
	Version string
}

// termsVersion is the version terms carry ("" when they carry none).
func termsVersion(p RetentionPolicy) string {
	if t, ok := p.(Terms); ok {
		return t.Version
	}
	return ""
}

// TermsActivation is the active retention terms version: when and by which
// process (host-pid) it was made so, and from which policy file.
type TermsActivation struct {
	Version     string // "" when none is recorded yet
	File        string
	ActivatedAt time.Time
	ActivatedBy string
}

// Stale reports whether terms of version may not remove anything: other
// terms are the active ones.
func (a TermsActivation) Stale(version string) bool {
	return a.Version != "" && a.Version != version
}

const selectActiveTerms = `SELECT version, name, activated_at, activated_by FROM retention_terms_versions
    WHERE superseded_at IS NULL`

// ActiveTerms returns the active retention terms version (Version "" when
// none is recorded yet).
func ActiveTerms(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (TermsActivation, error) {
	var a TermsActivation
	err := scanActiveTerms(q.QueryRow(ctx, selectActiveTerms), &a)
	return a, err
}

// QueueActiveTerms queues ActiveTerms' read into b, into a.
func QueueActiveTerms(b *pgx.Batch, a *TermsActivation) {
	b.Queue(selectActiveTerms).QueryRow(func(row pgx.Row) error { return scanActiveTerms(row, a) })
}

// scanActiveTerms scans selectActiveTerms' row into a (left as it is when
// none is recorded yet).
func scanActiveTerms(row pgx.Row, a *TermsActivation) error {
	if err := row.Scan(&a.Version, &a.File, &a.ActivatedAt, &a.ActivatedBy); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("read the active retention terms: %w", err)
	}
	return nil
}

// termsLockKey is the advisory lock between retention runs, which hold it
// shared from the check of their terms to their commit, and activations of
// other terms, which take it alone in their transaction ("QDLTERM").
const termsLockKey int64 = 0x51444c5445524d00

// LockTermsChange makes tx, which changes the active retention terms, wait
// for the retention runs under way (each at most a batch and its lock
// waits), and runs of other keepers wait for tx: no run removes dead
// letters by terms that stopped being the active ones while it ran.
func LockTermsChange(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, termsLockKey); err != nil {
		return fmt.Errorf("wait for the retention runs under way: %w", err)
	}
	return nil
}

// underTerms runs run while terms of version are the active ones, holding
// the terms lock shared from the check to run's return (its commit). It
// returns held false, and the active terms, when they are other terms:
// run was not called.
func underTerms(ctx context.Context, conn *pgx.Conn, version string, run func() error) (held bool, active TermsActivation, err error) {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock_shared($1)`, termsLockKey); err != nil {
		return false, active, fmt.Errorf("retention terms lock: %w", err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock_shared($1)`, termsLockKey); err != nil {
			conn.Close(uctx) //nolint:errcheck // closing drops the lock anyway
		}
	}()
	if active, err = ActiveTerms(ctx, conn); err != nil || active.Stale(version) {
		return false, active, err
	}
	return true, active, run()
}

// sayStale logs once when this process's terms stop or start being the
// active ones, and sets quarantine_retention_terms_stale.
func (k *Keeper) sayStale(pass KeeperPass, terms RetentionPolicy) {
	if !pass.Stale {
		k.metrics.stale.Set(0)
		if k.stale != "" {
			k.log.Info("partition keeper: this process's retention terms are the active ones again; it removes dead letters by them",
				"retention_version", shortVersion(termsVersion(terms)))
		}
		k.stale = ""
		return
	}
	k.metrics.stale.Set(1)
	if k.stale == pass.Active.Version {
		return
	}
	k.stale = pass.Active.Version
	k.log.Warn("partition keeper: this process's retention terms are not the active ones: it removes no dead letters until its policy file has them "+
		"(an older replica, or a policy file not rolled; replaced terms come back only by `console policy rollback --to VERSION`, docs/runbook.md)",
		"retention_version", shortVersion(termsVersion(terms)), "active_retention_version", shortVersion(pass.Active.Version),
		"active_since", pass.Active.ActivatedAt, "activated_by", pass.Active.ActivatedBy, "file", pass.Active.File)
}

// shortVersion is a version as pages and logs show it (12 characters).
func shortVersion(v string) string { return v[:min(len(v), 12)] }
