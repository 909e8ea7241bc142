package audit_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// Review rev-audit. An auditor pages back from an old day ("to" only, as
// the audit page's form allows: what happened before the incident). The
// page is newest first by seq (keyset), the bound is on at: PostgreSQL does
// not know that at grows with seq and walked the primary key (or tenant,
// seq) backwards from the head, filtering, through every entry newer than
// the bound before it found the first of the page (0.9 s at 2 M entries
// with the bound 1.5 M back, growing with the log toward the statement
// timeout). A "from" only, with fewer entries after it than a page, walked
// the whole older log the same way.
//
// 300,000 entries (10,000 a day over 30 days, two tenants): each page's
// plan, run, reads about what a page holds (buffers), not the entries on
// the far side of its time bound (some 2,000 pages of the table before).
func TestRevAuditOldPageDoesNotScanTheNewerLog(t *testing.T) {
	b := setup(t)
	const perDay, days = 10_000, 30
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Entries made in bulk, hashes and all made up: the chain is not what
	// this reads, so the owner lays them down without the chain's checks.
	tx, err := b.db.OwnerPool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(b.ctx)
	_, err = tx.Exec(b.ctx, `ALTER TABLE audit_log DISABLE TRIGGER USER`)
	require.NoError(t, err)
	_, err = tx.Exec(b.ctx, `
        INSERT INTO audit_log (seq, at, tenant, action, outcome, actor_subject, prev_hash, hash)
        SELECT g, $1::timestamptz + (g - 1) * ($2::float8 / $3) * interval '1 second',
               CASE WHEN g % 2 = 0 THEN 'acme' ELSE 'globex' END, 'deadletter.discard', 'ok', 'sub-' || (g % 50),
               CASE WHEN g = 1 THEN NULL ELSE sha256(int8send(g - 1)) END, sha256(int8send(g))
        FROM generate_series(1, $4::bigint) g`, start, 86400.0, perDay, perDay*days)
	require.NoError(t, err)
	_, err = tx.Exec(b.ctx, `ALTER TABLE audit_log ENABLE TRIGGER USER`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(b.ctx))
	_, err = b.db.OwnerPool.Exec(b.ctx, `VACUUM ANALYZE audit_log`)
	require.NoError(t, err)

	day := start.AddDate(0, 0, 5)
	last := start.AddDate(0, 0, days).Add(-time.Hour) // the last hour: 416 entries, 208 of acme
	for name, f := range map[string]audit.Filter{
		"OneOldDay":       {Tenants: []string{"acme"}, From: day, To: day.AddDate(0, 0, 1)},
		"UpToAnOldDay":    {Tenants: []string{"acme"}, To: day},
		"ActorOnOldDay":   {Tenants: []string{"acme"}, Actor: "sub-2", From: day, To: day.AddDate(0, 0, 1)},
		"ActionUpToADay":  {Action: "deadletter.discard", To: day},
		"FromTheLastHour": {Tenants: []string{"acme"}, From: last, Actor: "sub-4"},
	} {
		pg, err := audit.List(b.ctx, b.db.Pool, f)
		require.NoError(t, err)
		if name == "FromTheLastHour" {
			require.NotEmpty(t, pg.Entries, name)
			require.Less(t, len(pg.Entries), audit.DefaultLimit, name)
		} else {
			require.Len(t, pg.Entries, audit.DefaultLimit, name)
		}
		for _, e := range pg.Entries {
			require.False(t, (!f.From.IsZero() && e.At.Before(f.From)) || (!f.To.IsZero() && !e.At.Before(f.To)), "%s: entry %d at %s is outside the range", name, e.Seq, e.At)
		}

		sql, args := audit.FirstPageQuery(f)
		var plan []struct {
			Plan struct {
				SharedHit  int `json:"Shared Hit Blocks"`
				SharedRead int `json:"Shared Read Blocks"`
			} `json:"Plan"`
		}
		var raw []byte
		require.NoError(t, b.db.Pool.QueryRow(b.ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+sql, args).Scan(&raw))
		require.NoError(t, json.Unmarshal(raw, &plan))
		blocks := plan[0].Plan.SharedHit + plan[0].Plan.SharedRead
		t.Logf("%s: %d entries, %d buffers", name, len(pg.Entries), blocks)
		assert.Less(t, blocks, 400, "%s: one page read %d buffers: it walked the log beyond its time bound", name, blocks)
	}
}
