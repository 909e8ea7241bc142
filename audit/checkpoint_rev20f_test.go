package audit_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
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
	_, err = b.db.Pool.Exec(b.ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
        VALUES ($1, $2, now(), 'interval', $3, $4, sha512('s'))`, forged.Seq, forged.Hash, signer.KeyID(), []byte(signer.PublicKey()))
	require.NoError(t, err, "the database takes a checkpoint below the newest")

	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	require.Len(t, res.Warnings, 1, "verify finds the forgery: %s", res.String())

	// The console goes on: an entry, its checkpoint signed (the scheduler's Record).
	appendAll(t, b, event("four"))
	_, err = audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonInterval)
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	reg.MustRegister(audit.NewCheckpointCollector(b.db.Pool, keys, slog.New(slog.NewTextHandler(io.Discard, nil))))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var unverified, refused float64
	for _, mf := range mfs {
		switch mf.GetName() {
		case "quarantine_audit_unverified_checkpoints":
			unverified = mf.GetMetric()[0].GetGauge().GetValue()
		case "quarantine_audit_checkpoints_refused_total":
			refused = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	var refusals int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_log WHERE action = $1`, audit.ActionCheckpointRefused).Scan(&refusals))
	assert.True(t, unverified > 0 || refused > 0,
		"the forged checkpoint at seq %d is signalled by neither series AuditCheckpointUnverified reads: unverified %v, refused %v (audit.checkpoint_refused entries: %d)",
		forged.Seq, unverified, refused, refusals)
}
