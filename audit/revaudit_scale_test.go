package audit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// Review rev-audit. An auditor pages back from an old day ("to" only, as
// the audit page's form allows: what happened before the incident) in a
// log of two million entries (10,000 a day over 200 days, two tenants).
// The page is newest first by seq (keyset), the bound is on at:
// PostgreSQL does not know that at grows with seq and walks the primary
// key (or tenant, seq) backwards from the head, filtering, through every
// entry newer than the bound (1.5 million here) before it finds the first
// of the page: ~0.9 s at 2 M entries, growing with the log; at tens of
// millions it reaches the statement timeout. A day range (From and To)
// and an actor on an old day are fine.
func TestRevAuditOldPageDoesNotScanTheNewerLog(t *testing.T) {
	if testing.Short() {
		t.Skip("fills two million audit entries")
	}
	b := setup(t)
	const perDay, days = 10_000, 200
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := b.db.OwnerPool.Exec(b.ctx, `
        INSERT INTO audit_log (seq, at, tenant, action, outcome, actor_subject, prev_hash, hash)
        SELECT g, $1::timestamptz + (g - 1) * ($2::float8 / $3) * interval '1 second',
               CASE WHEN g % 2 = 0 THEN 'acme' ELSE 'globex' END, 'deadletter.discard', 'ok', 'sub-' || (g % 50),
               CASE WHEN g = 1 THEN NULL ELSE sha256(int8send(g - 1)) END, sha256(int8send(g))
        FROM generate_series(1, $4::bigint) g`, start, 86400.0, perDay, perDay*days)
	require.NoError(t, err)
	_, err = b.db.OwnerPool.Exec(b.ctx, `VACUUM ANALYZE audit_log`)
	require.NoError(t, err)

	day := start.AddDate(0, 0, 50)
	for name, f := range map[string]audit.Filter{
		"OneOldDay":      {Tenants: []string{"acme"}, From: day, To: day.AddDate(0, 0, 1)},
		"UpToAnOldDay":   {Tenants: []string{"acme"}, To: day},
		"ActorOnOldDay":  {Tenants: []string{"acme"}, Actor: "sub-2", From: day, To: day.AddDate(0, 0, 1)},
		"ActionUpToADay": {Action: "deadletter.discard", To: day},
	} {
		began := time.Now()
		pg, err := audit.List(b.ctx, b.db.Pool, f)
		took := time.Since(began)
		require.NoError(t, err)
		require.Len(t, pg.Entries, audit.DefaultLimit, name)
		assert.Less(t, took, 300*time.Millisecond, "%s: one page took %s", name, took)
	}
}
