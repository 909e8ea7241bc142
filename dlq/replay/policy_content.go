package replay

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// What a version said (migration 0039): the canonical text its version
// hashes, recorded by the activation that made it active, and read back
// and checked against the version before anything shows it. A replay
// request names the version it was made under; this is how an auditor, an
// operator about to roll back, and every console's Policy page read what
// that version said, whatever file the process reading it runs.
const (
	// The content of the versions of t made active in this transaction,
	// or active already (as a version active since before migration 0039
	// is at the next start with its file); a replaced version gets none
	// from a process that merely restarts with it. The database checks the
	// text against the version (replay_policy_contents_hash), and nothing
	// changes it once recorded.
	recordPolicyContent = `INSERT INTO replay_policy_contents (version, content, recorded_by)
        SELECT version, $2, $3 FROM replay_policy_versions WHERE version = $1 AND superseded_at IS NULL
        ON CONFLICT (version) DO NOTHING`
	recordRetentionContent = `INSERT INTO retention_terms_contents (version, content, recorded_by)
        SELECT version, $2, $3 FROM retention_terms_versions WHERE version = $1 AND superseded_at IS NULL
        ON CONFLICT (version) DO NOTHING`

	versionContentColumns = `v.version, v.name, v.activated_at, v.activated_by, v.superseded_at,
            coalesce(c.content, ''), coalesce(c.recorded_at, v.activated_at), coalesce(c.recorded_by, '')`
	selectPolicyContents = `SELECT ` + versionContentColumns + `
        FROM replay_policy_versions v LEFT JOIN replay_policy_contents c USING (version)`
	selectRetentionContents = `SELECT ` + versionContentColumns + `
        FROM retention_terms_versions v LEFT JOIN retention_terms_contents c USING (version)`
)

// recordContents records, in ActivatePolicy's transaction, what the
// versions of t say when they are the active ones.
func recordContents(ctx context.Context, tx pgx.Tx, t *replaypolicy.Table, process string) error {
	if _, err := tx.Exec(ctx, recordPolicyContent, t.Version(), t.Canonical(), process); err != nil {
		return fmt.Errorf("record what replay policy %.12s says: %w", t.Version(), err)
	}
	r := t.Retention()
	if _, err := tx.Exec(ctx, recordRetentionContent, RetentionVersion(r), r.Canonical(), process); err != nil {
		return fmt.Errorf("record what retention terms %.12s say: %w", RetentionVersion(r), err)
	}
	return nil
}

// VersionContent is a replay policy version, or a retention terms version,
// as the database keeps it: when it was active, and what it said when that
// was recorded.
type VersionContent struct {
	PolicyVersion        // File: the policy file it was last made active from; SupersededAt nil: the active one
	ActivatedBy   string // the process (host-pid) that last made it active
	// Terms: a retention terms version (RetentionVersion), not a replay
	// policy version.
	Terms bool
	// Rules (a replay policy version) or Retention (retention terms) is
	// what the version says, read back from Text; both nil when nothing
	// was recorded (NotRecorded says why).
	Rules     *replaypolicy.Table
	Retention *replaypolicy.Retention
	// Text is the canonical text the version hashes, as recorded ("" when
	// it was not), by the process RecordedBy at RecordedAt.
	Text       string
	RecordedAt time.Time
	RecordedBy string
}

// Recorded reports whether what the version said is known.
func (v VersionContent) Recorded() bool { return v.Text != "" }

// Kind names the kind of version, as console policy status and rollback
// do: "replay policy" or "retention terms".
func (v VersionContent) Kind() string { return versionKind(v.Terms) }

// Kind names what the allowance lets back, as VersionContent.Kind does.
func (r PolicyRollback) Kind() string { return versionKind(r.Terms) }

// versionKind is "retention terms" for a retention terms version, else
// "replay policy".
func versionKind(terms bool) string {
	if terms {
		return "retention terms"
	}
	return "replay policy"
}

// NotRecorded says why what the version said is not known ("" when it
// is).
func (v VersionContent) NotRecorded() string {
	if v.Recorded() {
		return ""
	}
	return fmt.Sprintf("not recorded: %s %.12s was last active before the console kept what versions say (migration 0039), "+
		"and no process has run it as the active version since", v.Kind(), v.Version)
}

// PolicyContent returns replay policy version (its full name) as the
// database keeps it; not found when it was never active.
func PolicyContent(ctx context.Context, q querier, version string) (VersionContent, error) {
	return versionContent(ctx, q, selectPolicyContents+` WHERE v.version = $1`, version, false)
}

// TermsContent returns retention terms version (its full name) as the
// database keeps it; not found when they were never active.
func TermsContent(ctx context.Context, q querier, version string) (VersionContent, error) {
	return versionContent(ctx, q, selectRetentionContents+` WHERE v.version = $1`, version, true)
}

// FindVersion returns the replay policy version or retention terms
// version whose name is version or starts with it (at least 8 characters,
// as console policy rollback takes it), as the database keeps it. It is
// not found when no version that was ever active has that name, and
// invalid when the start is too short or names more than one.
func FindVersion(ctx context.Context, q querier, version string) (VersionContent, error) {
	return findVersion(ctx, q, version, true)
}

// FindPolicyVersion is FindVersion of replay policy versions alone: a
// retention terms version is not found by it, nor counted among those a
// start names, exactly as if it had never been active. It is for those
// who may not read every tenant's retention lines, to whom a terms
// version (the SHA-256 of a text holding every tenant's lines) found or
// not would confirm a guess at another tenant's lines.
func FindPolicyVersion(ctx context.Context, q querier, version string) (VersionContent, error) {
	return findVersion(ctx, q, version, false)
}

// findVersion is FindVersion, of retention terms versions too when terms.
func findVersion(ctx context.Context, q querier, version string, terms bool) (VersionContent, error) {
	what := "replay policy version"
	if terms {
		what = "replay policy version or retention terms version"
	}
	version = strings.TrimSpace(version)
	switch {
	case len(version) < 8:
		return VersionContent{}, quarantine.Errorf(quarantine.EINVALID, "give at least the first 8 characters of the version (the Policy page and the logs show 12)")
	case len(version) > sha256.Size*2:
		return VersionContent{}, quarantine.Errorf(quarantine.ENOTFOUND, "no version is longer than %d characters", sha256.Size*2)
	}
	// Both kinds are read whatever the caller, so that not even the time
	// of the answer tells a terms version from none.
	policy, found, err := versionsStarting(ctx, q, version)
	if !terms {
		found = nil
	}
	switch {
	case err != nil:
		return VersionContent{}, fmt.Errorf("find version %q: %w", version, err)
	case len(policy)+len(found) == 0:
		return VersionContent{}, quarantine.Errorf(quarantine.ENOTFOUND, "no %s starting %q was ever active", what, version)
	case len(policy)+len(found) > 1:
		return VersionContent{}, quarantine.Errorf(quarantine.EINVALID, "more than one %s starts %q: give more of it", what, version)
	case len(found) == 1:
		return TermsContent(ctx, q, found[0].Version)
	}
	return PolicyContent(ctx, q, policy[0].Version)
}

// versionContent reads the one version sql selects by $1 = version.
func versionContent(ctx context.Context, q querier, sql, version string, terms bool) (VersionContent, error) {
	rows, err := q.Query(ctx, sql, version)
	if err != nil {
		return VersionContent{}, fmt.Errorf("read version %.12s: %w", version, err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, func(r pgx.CollectableRow) (VersionContent, error) { return scanContent(r, terms) })
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return VersionContent{}, quarantine.Errorf(quarantine.ENOTFOUND, "%s %.12s was never active", versionKind(terms), version)
	case err != nil:
		return VersionContent{}, fmt.Errorf("read version %.12s: %w", version, err)
	}
	return v, v.read()
}

func scanContent(r pgx.CollectableRow, terms bool) (VersionContent, error) {
	v := VersionContent{Terms: terms}
	err := r.Scan(&v.Version, &v.File, &v.ActivatedAt, &v.ActivatedBy, &v.SupersededAt, &v.Text, &v.RecordedAt, &v.RecordedBy)
	return v, err
}

// read fills Rules or Retention from Text, and checks that Text is what
// the version hashes (the database checked it when it was recorded; this
// checks the reading too).
func (v *VersionContent) read() error {
	if !v.Recorded() {
		return nil
	}
	var got string
	if v.Terms {
		r, err := replaypolicy.ParseRetentionCanonical(v.Text)
		if err != nil {
			return fmt.Errorf("read retention terms %.12s as recorded: %w", v.Version, err)
		}
		v.Retention, got = r, RetentionVersion(r)
	} else {
		t, err := replaypolicy.ParseCanonical(v.File, v.Text)
		if err != nil {
			return fmt.Errorf("read replay policy %.12s as recorded: %w", v.Version, err)
		}
		v.Rules, got = t, t.Version()
	}
	if got != v.Version {
		v.Rules, v.Retention = nil, nil
		return fmt.Errorf("%s %.12s as recorded reads as version %.12s: the record is not what was activated", v.Kind(), v.Version, got)
	}
	return nil
}

// PolicyContent is PolicyContent on the service's database.
func (s *Service) PolicyContent(ctx context.Context, version string) (VersionContent, error) {
	return PolicyContent(ctx, s.pool, version)
}

// TermsContent is TermsContent on the service's database.
func (s *Service) TermsContent(ctx context.Context, version string) (VersionContent, error) {
	return TermsContent(ctx, s.pool, version)
}

// FindVersion is FindVersion on the service's database.
func (s *Service) FindVersion(ctx context.Context, version string) (VersionContent, error) {
	return FindVersion(ctx, s.pool, version)
}

// FindPolicyVersion is FindPolicyVersion on the service's database.
func (s *Service) FindPolicyVersion(ctx context.Context, version string) (VersionContent, error) {
	return FindPolicyVersion(ctx, s.pool, version)
}
