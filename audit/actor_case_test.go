package audit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// TestActorFilterMatchesAnEmailInAnyCase: the identity provider spells
// Jane's address Jane.Doe@Example.com; the auditor types it as the
// bindings page shows it, lower-cased, or in capitals, and finds her
// entries. An unverified claim to the same address is still nobody's,
// in any case, and a subject (the provider's own key) matches exactly.
func TestActorFilterMatchesAnEmailInAnyCase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	jane := quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-Jane", Email: "Jane.Doe@Example.com", EmailVerified: true}
	claim := quarantine.Actor{Issuer: "https://other.example", Subject: "sub-mallory", Email: "jane.doe@example.com"}
	entries := appendAll(t, b,
		audit.Event{Actor: jane, Tenant: "acme", Action: "login", Outcome: audit.OutcomeOK},
		audit.Event{Actor: claim, Tenant: "acme", Action: "login", Outcome: audit.OutcomeOK},
		audit.Event{Actor: ann, Tenant: "acme", Action: "login", Outcome: audit.OutcomeOK},
		audit.Event{Actor: jane, Tenant: "acme", Action: "deadletter.discard", Outcome: audit.OutcomeOK},
	)
	janes := []int64{entries[3].Seq, entries[0].Seq}
	for _, tc := range []struct {
		actor string
		want  []int64
	}{
		{"Jane.Doe@Example.com", janes},
		{"jane.doe@example.com", janes},
		{"JANE.DOE@EXAMPLE.COM", janes},
		{"sub-Jane", janes},
		{"SUB-JANE", nil},
		{"jane.doe", nil},
	} {
		pg, err := audit.List(b.ctx, b.db.Pool, audit.Filter{Actor: tc.actor})
		require.NoError(t, err, tc.actor)
		assert.Equal(t, tc.want, nilIfEmpty(seqsOf(pg.Entries)), tc.actor)
	}
}

func nilIfEmpty(s []int64) []int64 {
	if len(s) == 0 {
		return nil
	}
	return s
}

// TestActorEmailFilterReadsItsIndex: at 200,000 entries, an email typed in
// another case than the provider's is found through the lower(actor_email)
// index (migration 0041), reading about what the page holds, not the log.
func TestActorEmailFilterReadsItsIndex(t *testing.T) {
	b := setup(t)
	const rows = 200_000
	// Entries made in bulk, hashes made up (as in
	// TestRevAuditOldPageDoesNotScanTheNewerLog): the chain is not what
	// this reads. One in 2,000 is Jane's, spelled as her provider does.
	tx, err := b.db.OwnerPool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(b.ctx)
	_, err = tx.Exec(b.ctx, `ALTER TABLE audit_log DISABLE TRIGGER USER`)
	require.NoError(t, err)
	_, err = tx.Exec(b.ctx, `
        INSERT INTO audit_log (seq, at, tenant, action, outcome, actor_subject, actor_email, actor_email_verified, prev_hash, hash)
        SELECT g, now() - ($1 - g) * interval '1 second', 'acme', 'deadletter.discard', 'ok',
               'sub-' || (g % 2000),
               CASE WHEN g % 2000 = 7 THEN 'Jane.Doe@Example.com' ELSE 'User' || (g % 2000) || '@Example.com' END, true,
               CASE WHEN g = 1 THEN NULL ELSE sha256(int8send(g - 1)) END, sha256(int8send(g))
        FROM generate_series(1, $1::bigint) g`, rows)
	require.NoError(t, err)
	_, err = tx.Exec(b.ctx, `ALTER TABLE audit_log ENABLE TRIGGER USER`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(b.ctx))
	_, err = b.db.OwnerPool.Exec(b.ctx, `VACUUM ANALYZE audit_log`)
	require.NoError(t, err)

	f := audit.Filter{Tenants: []string{"acme"}, Actor: "jane.doe@example.com"}
	pg, err := audit.List(b.ctx, b.db.Pool, f)
	require.NoError(t, err)
	require.Len(t, pg.Entries, audit.DefaultLimit)
	for _, e := range pg.Entries {
		require.Equal(t, "Jane.Doe@Example.com", e.Actor.Email)
	}

	sql, args := audit.FirstPageQuery(f)
	var raw []byte
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+sql, args).Scan(&raw))
	var plan []struct {
		Plan struct {
			SharedHit  int `json:"Shared Hit Blocks"`
			SharedRead int `json:"Shared Read Blocks"`
		} `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(raw, &plan))
	blocks := plan[0].Plan.SharedHit + plan[0].Plan.SharedRead
	t.Logf("%d buffers: %s", blocks, raw)
	assert.True(t, strings.Contains(string(raw), `"audit_log_actor_email_lower_idx"`), "the filter reads the lower(actor_email) index")
	assert.Less(t, blocks, 400, "one page read %d buffers", blocks)
}
