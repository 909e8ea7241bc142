package audit_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevAudit20ForgeryBelowTheLastCheckpointIsNeverSignalled: the
// runtime role may insert a checkpoint at any seq that has none, naming the
// entry's hash (migration 0025) and dated before now (0054); its signature
// is nobody's. Inserted below the newest checkpoint that verifies, it is
// counted nowhere: quarantine_audit_unverified_checkpoints counts only
// checkpoints newer than that one, Record refuses (and so
// quarantine_audit_checkpoints_refused_total counts) only those, and the
// AuditCheckpointUnverified rule, "the tamper signal: page at once", reads
// nothing else. console audit verify exits 0 ("audit chain ok ... 1
// warning"), and the runbook explains that warning as one "the console
// refused ... (an audit.checkpoint_refused entry) and signed past", an
// entry the log never gets. Someone with the runtime role's credentials
// writes into the audit tables, and no alert ever says so.
func TestRevAudit20ForgeryBelowTheLastCheckpointIsNeverSignalled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	entries := appendAll(t, b, event("one"), event("two"), event("three"))
	signed, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonInterval)
	require.NoError(t, err)
	require.Equal(t, entries[2].Seq, signed.Seq)
	forged := entries[1]
	// Migration 0063 refuses a checkpoint below the newest, whoever
	// inserts it: the forgery the test inserted (it asserted the database
	// took it, then that nothing signalled it) can no longer be written, so
	// the test now asserts the refusal, and that nothing of it is left for
	// verify, the gauge or the counter to miss.
	_, err = b.db.Pool.Exec(b.ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
        VALUES ($1, $2, now(), 'interval', $3, $4, sha512('s'))`, forged.Seq, forged.Hash, signer.KeyID(), []byte(signer.PublicKey()))
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "the database refuses a checkpoint below the newest")
	assert.Equal(t, "23514", pgErr.Code, "check_violation: %s", pgErr.Message)
	assert.Contains(t, pgErr.Message, "below the newest checkpoint")

	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	assert.Empty(t, res.Warnings, "no forgery stored: %s", res.String())

	// The console goes on: an entry, its checkpoint signed (the scheduler's
	// Record), which the trigger takes at the head.
	appendAll(t, b, event("four"))
	_, err = audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonInterval)
	require.NoError(t, err)
	var checkpoints int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_checkpoints WHERE seq < $1`, signed.Seq).Scan(&checkpoints))
	assert.Zero(t, checkpoints, "no checkpoint below the one the console signed first")

	// Nor in another isolation, where the newest could be read from an
	// older snapshot.
	tx, err := b.db.Pool.BeginTx(b.ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(b.ctx) }()
	_, err = tx.Exec(b.ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
        VALUES ($1, $2, now(), 'interval', $3, $4, sha512('s'))`, forged.Seq, forged.Hash, signer.KeyID(), []byte(signer.PublicKey()))
	require.ErrorAs(t, err, &pgErr, "the database refuses a checkpoint outside read committed")
	assert.Equal(t, "23514", pgErr.Code, "check_violation: %s", pgErr.Message)
}
