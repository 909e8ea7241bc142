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

// TestFixAudit14ForgeryBeforeACheckpointIsCounted: a checkpoint the
// runtime role inserts below the head, after the last one that verifies,
// counts in quarantine_audit_unverified_checkpoints only until the
// console signs the head: then it is older than the newest that verifies,
// and the gauge (and the alert on it) clears. Record refuses it in the
// log as it signs past it, and quarantine_audit_checkpoints_refused_total,
// the count of those refusals, stays up; a Record with nothing new to
// refuse adds none.
func TestFixAudit14ForgeryBeforeACheckpointIsCounted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())
	appendAll(t, b, event("one"))
	first, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonInterval)
	require.NoError(t, err)
	entries := appendAll(t, b, event("two"), event("three"))
	forged := entries[0]
	_, err = b.db.Pool.Exec(b.ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
        VALUES ($1, $2, now(), 'interval', $3, $4, sha512('s'))`, forged.Seq, forged.Hash, signer.KeyID(), []byte(signer.PublicKey()))
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	reg.MustRegister(audit.NewCheckpointCollector(b.db.Pool, keys, slog.New(slog.NewTextHandler(io.Discard, nil))))
	metrics := func() (unverified, refused float64) {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			switch mf.GetName() {
			case "quarantine_audit_unverified_checkpoints":
				unverified = mf.GetMetric()[0].GetGauge().GetValue()
			case "quarantine_audit_checkpoints_refused_total":
				refused = mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return unverified, refused
	}
	unverified, refused := metrics()
	assert.EqualValues(t, 1, unverified, "the forgery after seq %d", first.Seq)
	assert.Zero(t, refused)

	cp, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonInterval)
	require.NoError(t, err)
	require.NoError(t, cp.VerifySignature(keys))
	assert.Equal(t, entries[1].Seq+1, cp.Seq, "the refusal is the head signed")
	var action, objectID, reason string
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT action, object_id, reason FROM audit_log WHERE seq = $1`, cp.Seq).Scan(&action, &objectID, &reason))
	assert.Equal(t, audit.ActionCheckpointRefused, action)
	assert.Equal(t, "2", objectID)
	assert.Contains(t, reason, "the checkpoint at seq 2 does not verify")

	unverified, refused = metrics()
	assert.Zero(t, unverified, "signed past: the gauge clears")
	assert.EqualValues(t, 1, refused, "the refusal stays counted")

	again, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonInterval)
	require.NoError(t, err)
	assert.Equal(t, cp, again, "nothing new to refuse or sign")
	appendAll(t, b, event("four"))
	_, err = audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonInterval)
	require.NoError(t, err)
	_, refused = metrics()
	assert.EqualValues(t, 1, refused, "a forgery is refused once: the checkpoint signed past it verifies")

	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	assert.True(t, res.OK(), res.String())
}
