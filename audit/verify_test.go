package audit_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// tamper runs sql as someone who owns the table would to get past its
// triggers: on a connection of its own, with the triggers disabled for the
// length of one transaction, then put back as the migration left them.
func tamper(t *testing.T, b bundle, statements ...string) {
	t.Helper()
	conn, err := pgx.Connect(b.ctx, b.db.OwnerURL)
	require.NoError(t, err)
	defer conn.Close(b.ctx)
	err = pgx.BeginFunc(b.ctx, conn, func(tx pgx.Tx) error {
		steps := append([]string{`ALTER TABLE audit_log DISABLE TRIGGER USER`}, statements...)
		steps = append(steps,
			`ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_no_update_delete`,
			`ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_no_truncate`,
			`ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_continues_chain`)
		for _, sql := range steps {
			if _, err := tx.Exec(b.ctx, sql); err != nil {
				return fmt.Errorf("%s: %w", sql, err)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

func TestAuditChainDetectsTamper(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// sql edits the table; it gets the chain as appended, for forgers.
		sql       func(chain []audit.Entry) []string
		wantBad   int64
		wantHead  int64 // last seq that still verifies
		wantWords string
	}{
		{
			name:      "EditedReason",
			sql:       one(`UPDATE audit_log SET reason = 'nothing to see' WHERE seq = 5`),
			wantBad:   5,
			wantHead:  4,
			wantWords: "seq 5: hash does not match its contents (edited row)",
		},
		{
			name:      "EditedJSON",
			sql:       one(`UPDATE audit_log SET after = '{"n": 99}' WHERE seq = 3`),
			wantBad:   3,
			wantHead:  2,
			wantWords: "seq 3: hash does not match its contents (edited row)",
		},
		{
			name:      "EditedTimestamp",
			sql:       one(`UPDATE audit_log SET at = at + interval '1 microsecond' WHERE seq = 8`),
			wantBad:   8,
			wantHead:  7,
			wantWords: "seq 8: hash does not match its contents (edited row)",
		},
		{
			name:      "EditedWithWrongHash",
			sql:       one(`UPDATE audit_log SET reason = 'x', hash = sha256('forged') WHERE seq = 5`),
			wantBad:   5,
			wantHead:  4,
			wantWords: "seq 5: hash does not match its contents (edited row)",
		},
		{
			// Whoever edits a row and gives it its correct new hash breaks
			// the next link. (fix-audit-v3: its correct content digest
			// too, which hash version 3 stores beside it.)
			name: "EditedAndRehashed",
			sql: func(chain []audit.Entry) []string {
				e := chain[4]
				e.Reason = "forged"
				return []string{fmt.Sprintf(`UPDATE audit_log SET reason = 'forged', content_digest = '\x%x', hash = '\x%x' WHERE seq = 5`,
					audit.ContentDigestOf(&e), audit.HashOf(&e))}
			},
			wantBad:   6,
			wantHead:  5,
			wantWords: "seq 6: prev_hash does not match seq 5",
		},
		{
			name:      "DeletedRow",
			sql:       one(`DELETE FROM audit_log WHERE seq = 4`),
			wantBad:   4,
			wantHead:  3,
			wantWords: "seq 4: missing, seq 3 is followed by seq 5 (deleted row)",
		},
		{
			name:      "DeletedFirstRow",
			sql:       one(`DELETE FROM audit_log WHERE seq = 1`),
			wantBad:   1,
			wantHead:  0,
			wantWords: "seq 1: missing, the log starts at seq 2",
		},
		{
			// Renumbering to close the gap still breaks the chain.
			name: "DeletedAndRenumbered",
			sql: func([]audit.Entry) []string {
				return []string{
					`DELETE FROM audit_log WHERE seq = 4`,
					`UPDATE audit_log SET seq = seq + 1000 WHERE seq > 4`,
					`UPDATE audit_log SET seq = seq - 1001 WHERE seq > 1000`,
				}
			},
			wantBad:   4,
			wantHead:  3,
			wantWords: "seq 4: prev_hash does not match seq 3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var chain []audit.Entry
			for i := range 10 {
				e := event("test.step")
				e.Reason = fmt.Sprintf("step %d", i+1)
				e.After = map[string]int{"n": i + 1}
				chain = append(chain, appendAll(t, b, e)...)
			}
			requireIntact(t, b, 10)

			tamper(t, b, tt.sql(chain)...)

			res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{})
			require.NoError(t, err)
			require.False(t, res.OK())
			require.Equal(t, tt.wantBad, res.FirstBad, res.Problem)
			require.Contains(t, res.Problem, tt.wantWords)
			require.Equal(t, tt.wantHead, res.HeadSeq)
			require.ErrorIs(t, res.Err(), audit.ErrChainBroken)
			require.Contains(t, res.String(), "BROKEN")
			require.Contains(t, res.String(), tt.wantWords)
			t.Log(res)
		})
	}
}

func one(sql string) func([]audit.Entry) []string {
	return func([]audit.Entry) []string { return []string{sql} }
}

func TestAuditRejectsUpdateDeleteTruncate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	appendAll(t, b, event("one"), event("two"))
	tests := []struct {
		name, sql, op string
		replica       bool
	}{
		{"Update", `UPDATE audit_log SET reason = 'changed' WHERE seq = 1`, "UPDATE", false},
		{"Delete", `DELETE FROM audit_log WHERE seq = 2`, "DELETE", false},
		{"Truncate", `TRUNCATE audit_log`, "TRUNCATE", false},
		// The triggers are ENABLE ALWAYS: replica mode does not skip them.
		{"UpdateAsReplica", `UPDATE audit_log SET reason = 'changed' WHERE seq = 1`, "UPDATE", true},
		{"DeleteAsReplica", `DELETE FROM audit_log`, "DELETE", true},
		{"TruncateAsReplica", `TRUNCATE audit_log`, "TRUNCATE", true},
	}
	// As the server's administrator, who holds every privilege and may set
	// session_replication_role: the triggers are what refuses.
	admin, err := pgx.Connect(b.ctx, b.db.AdminURL)
	require.NoError(t, err)
	defer admin.Close(b.ctx)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := pgx.BeginFunc(b.ctx, admin, func(tx pgx.Tx) error {
				if tt.replica {
					if _, err := tx.Exec(b.ctx, `SET LOCAL session_replication_role = replica`); err != nil {
						return err
					}
				}
				_, err := tx.Exec(b.ctx, tt.sql)
				return err
			})
			var pgErr *pgconn.PgError
			require.ErrorAs(t, err, &pgErr)
			require.Equal(t, "42501", pgErr.Code, "insufficient_privilege, like the runtime role's missing privileges")
			require.Equal(t, "audit_log is append-only: "+tt.op+" is not allowed", pgErr.Message)
		})
	}
	requireIntact(t, b, 2)
}

func TestVerifyEmptyLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := requireIntact(t, b, 0)
	require.Nil(t, res.Head)
	require.Equal(t, "audit chain ok: no entries yet", res.String())
}

// TestDatabaseHashesAsGo: the trigger of migration 0034 recomputes each
// row's hash in SQL; it must agree with hashEntry byte for byte, or
// appends fail. JSON whose strings hold what the SQL compaction removes
// between tokens (", ", ": "), escapes, and text past ASCII.
//
// fix-audit-v3: the chain starts with entries of hash version 2, as
// consoles before version 3 wrote them; the tricky ones are appended now,
// version 3, whose content digest (over the row's nonce, fix-audit-salt)
// the database computes too.
func TestDatabaseHashesAsGo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old := insertV2(t, b, "acme", "globex")
	tricky := []any{
		map[string]any{"a, b": "c: d", "q": `"quoted", \ back`, "nested": []any{1, 2.5, -3e20, true, nil, map[string]any{}}, "": []any{}},
		map[string]any{"uni": "é ü \u2028 \u202e 😀", "ctl": "tab\tnl\n", "html": "<a&b>"},
		"just a string with  two  spaces",
		[]any{"x , y", " : ", map[string]any{"k": " "}},
		12345678901234567890.5,
	}
	for i, v := range tricky {
		e := event("test.hash")
		e.Before, e.After = v, map[string]any{"i": i}
		e.Reason = fmt.Sprintf("reason %d: \u00e9\U0001F600", i)
		e.Actor.EmailVerified = i%2 == 0
		e.UserAgent = "ua \u202e"
		appendAll(t, b, e)
	}
	var same bool
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT bool_and(hash = audit_entry_hash(audit_log)) FROM audit_log`).Scan(&same))
	require.True(t, same, "every row's hash as the database computes it")
	var v3, digests int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT count(*) FILTER (WHERE hash_version = 3),
        count(*) FILTER (WHERE content_digest = audit_content_digest(audit_log)) FROM audit_log`).Scan(&v3, &digests))
	assert.Equal(t, len(tricky), v3, "the entries appended now are of hash version 3")
	assert.Equal(t, len(tricky), digests, "their content digest as the database computes it")
	// fix-audit-salt: each has a nonce of its own, which the digest covers
	// in SQL as in Go; the entries before version 3 have none.
	var nonces, distinct, oldNonces int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT count(*) FILTER (WHERE hash_version = 3 AND octet_length(nonce) = 16),
        count(DISTINCT nonce), count(nonce) FILTER (WHERE hash_version IS NULL) FROM audit_log`).Scan(&nonces, &distinct, &oldNonces))
	assert.Equal(t, len(tricky), nonces, "every entry of version 3 has a 16-byte nonce")
	assert.Equal(t, len(tricky), distinct, "no two share one")
	assert.Zero(t, oldNonces, "entries before version 3 have none")
	requireIntact(t, b, int64(len(old)+len(tricky)))
}
