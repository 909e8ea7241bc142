package audit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
)

// TestRevAudit32RefusedSelectionIsFoundByEachDeadLetter: a refused bulk
// selection is one denied row per tenant (dlq.RefusedIDs), whose object id
// is its first ten ids and whose after data lists the ids by reason. Each
// dead letter it lists is found by it: the log's Object filter ("dead_letter
// 18", "#18", "Dead letter #31") and the dead letter's own trail (its page)
// show that someone tried to discard #18, although "18" is not its object
// id. Tenant scoping is as for any entry: another tenant's viewer and trail
// never see it. The row of ids of no dead letter (outside any tenant, object
// dead_letters) is about no dead letter, and no dead letter's id finds it.
func TestRevAudit32RefusedSelectionIsFoundByEachDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	refused := dlq.RefusedIDs{}
	for id := int64(11); id <= 30; id++ {
		refused.Add(id, "acme", "not open")
	}
	refused.Add(31, "acme", "held by replay request 4")
	refused.Add(40, "globex", "not open")
	refused.AddMissing(50)
	tried := event("deadletter.discard")
	denials := refused.Events(tried)
	require.Len(t, denials, 3, "one row outside any tenant, one of acme, one of globex")

	of18 := event("deadletter.download")
	of18.ObjectType, of18.ObjectID = "dead_letter", "18"
	of180 := event("authz.denied")
	of180.ObjectType, of180.ObjectID, of180.Outcome = "dead_letter", "180", audit.OutcomeDenied
	entries := appendAll(t, b, append([]audit.Event{of18, of180}, denials...)...)
	missing, acme, globex := entries[2], entries[3], entries[4]
	require.Equal(t, "11,12,13,14,15,16,17,18,19,20,...", acme.ObjectID, "the row's object id is its first ten ids")
	require.Equal(t, "", missing.Tenant)

	list := func(object string, tenants ...string) []int64 {
		t.Helper()
		page, err := audit.List(b.ctx, b.db.Pool, audit.Filter{Object: object, Tenants: tenants, Limit: audit.MaxLimit})
		require.NoError(t, err, object)
		return seqsOf(page.Entries)
	}
	assert.Equal(t, []int64{acme.Seq, entries[0].Seq}, list("dead_letter 18", "acme"), "dead letter 18's download and the selection that listed it")
	assert.Equal(t, []int64{acme.Seq, entries[0].Seq}, list("#18", "acme"), "an id alone finds it too")
	assert.Equal(t, []int64{acme.Seq}, list("Dead letter #25"), "an id past the object id's first ten")
	assert.Equal(t, []int64{acme.Seq}, list("dead_letter:31"), "an id of another reason")
	assert.Equal(t, []int64{globex.Seq}, list("dead_letter 40"))
	assert.Empty(t, list("dead_letter 18", "globex"), "acme's refusal is not globex's to see")
	assert.Empty(t, list("dead_letter 40", "acme"), "nor globex's acme's")
	assert.Empty(t, list("dead_letter 50"), "an id of no dead letter is no dead letter's")
	assert.Equal(t, []int64{entries[1].Seq}, list("dead_letter 180"), "a listed 18 is not 180")

	trail := func(id, tenant string) []int64 {
		t.Helper()
		entries, err := audit.Trail(b.ctx, b.db.Pool, "dead_letter", id, "", tenant, 0)
		require.NoError(t, err, id)
		return seqsOf(entries)
	}
	assert.Equal(t, []int64{entries[0].Seq, acme.Seq}, trail("18", "acme"), "dead letter 18's page shows the selection that tried it")
	assert.Equal(t, []int64{acme.Seq}, trail("31", "acme"))
	assert.Empty(t, trail("40", "acme"), "a trail keeps to its tenant")
	assert.Equal(t, []int64{globex.Seq}, trail("40", "globex"))
	assert.Empty(t, trail("50", "acme"))

	var after struct {
		Refused map[string][]int64 `json:"refused"`
	}
	require.NoError(t, json.Unmarshal(acme.After, &after))
	assert.Contains(t, after.Refused["not open"], int64(18), "the ids are in after.refused, which the filter reads")
}

// TestRevAudit32RefusedSelectionLookupReadsItsIndex: the log lives at
// millions of rows, and the lookup of a dead letter in the refused
// selections reads their index (migration 0069), not the log. 300,000
// entries, one in ten a denied probe of a dead letter and one in a
// hundred a refused selection of 20 dead letters: the Object filter's first
// page and the trail's refusals each read a few buffers, and their plans
// name the index.
func TestRevAudit32RefusedSelectionLookupReadsItsIndex(t *testing.T) {
	b := setup(t)
	const rows = 300_000
	// Entries made in bulk, hashes and all made up: the chain is not what
	// this reads (TestRevAuditOldPageDoesNotScanTheNewerLog).
	tx, err := b.db.OwnerPool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(b.ctx)
	_, err = tx.Exec(b.ctx, `ALTER TABLE audit_log DISABLE TRIGGER USER`)
	require.NoError(t, err)
	_, err = tx.Exec(b.ctx, `
        INSERT INTO audit_log (seq, at, tenant, action, outcome, actor_subject, object_type, object_id, after, prev_hash, hash)
        SELECT g, now() - ($1 - g) * interval '1 second', CASE WHEN g % 2 = 0 THEN 'acme' ELSE 'globex' END,
               'deadletter.discard', CASE WHEN g % 10 = 0 THEN 'denied' ELSE 'ok' END, 'sub-' || (g % 50), 'dead_letter',
               CASE WHEN g % 100 = 0 THEN (g * 10)::text || ',...' ELSE (g % 50000)::text END,
               CASE WHEN g % 100 = 0 THEN jsonb_build_object('count', 20, 'refused', jsonb_build_object('not open',
                   (SELECT jsonb_agg(g * 10 + i) FROM generate_series(0, 19) i))) END,
               CASE WHEN g = 1 THEN NULL ELSE sha256(int8send(g - 1)) END, sha256(int8send(g))
        FROM generate_series(1, $1::bigint) g`, rows)
	require.NoError(t, err)
	_, err = tx.Exec(b.ctx, `ALTER TABLE audit_log ENABLE TRIGGER USER`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(b.ctx))
	_, err = b.db.OwnerPool.Exec(b.ctx, `VACUUM ANALYZE audit_log`)
	require.NoError(t, err)

	// Dead letter 1005 is listed by the selection of seq 100 (acme's).
	page, err := audit.List(b.ctx, b.db.Pool, audit.Filter{Object: "dead_letter 1005", Tenants: []string{"acme"}})
	require.NoError(t, err)
	require.Contains(t, seqsOf(page.Entries), int64(100))
	trail, err := audit.Trail(b.ctx, b.db.Pool, "dead_letter", "1005", "", "acme", 0)
	require.NoError(t, err)
	require.Contains(t, seqsOf(trail), int64(100))

	sql, args := audit.FirstPageQuery(audit.Filter{Object: "dead_letter 1005", Tenants: []string{"acme"}})
	for name, q := range map[string][]any{
		"Filter":   {sql, args},
		"Refusals": {audit.ObjectRefusalsQuery, "dead_letter", "1005", audit.TrailDenied, "acme", int64(1005)},
	} {
		var plan []struct {
			Plan struct {
				SharedHit  int `json:"Shared Hit Blocks"`
				SharedRead int `json:"Shared Read Blocks"`
			} `json:"Plan"`
		}
		var raw []byte
		require.NoError(t, b.db.Pool.QueryRow(b.ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+q[0].(string), q[1:]...).Scan(&raw))
		require.NoError(t, json.Unmarshal(raw, &plan))
		blocks := plan[0].Plan.SharedHit + plan[0].Plan.SharedRead
		t.Logf("%s: %d buffers", name, blocks)
		assert.True(t, strings.Contains(string(raw), "audit_log_refused_idx"), "%s: the plan does not read the refused selections' index", name)
		assert.Less(t, blocks, 100, "%s: the lookup read %d buffers: it scanned the log", name, blocks)
	}
}
