package audit_test

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestFixAudit12FutureCheckpointRefused: migration 0054 refuses a
// checkpoint dated after the database's clock, whoever inserts it; one
// dated by the clock (as Record dates them) is taken.
func TestFixAudit12FutureCheckpointRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	head := appendAll(t, b, event("one"))[0]
	_, err := b.db.Pool.Exec(b.ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
        VALUES ($1, $2, clock_timestamp() + interval '1 minute', 'interval', 'forged', sha256('p'), sha512('s'))`, head.Seq, head.Hash)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "a checkpoint dated a minute ahead is refused: %v", err)
	assert.Equal(t, "23514", pgErr.Code, "check_violation")

	cp, err := audit.Record(b.ctx, b.db.Pool, newSigner(t), audit.ReasonOnDemand)
	require.NoError(t, err, "the console's own checkpoint, dated by the clock, is taken")
	assert.Equal(t, head.Seq, cp.Seq)
}

// TestFixAudit12LatestVerifiedCheckpointSkipsForgeries: the last signed
// head is the newest checkpoint whose signature verifies; newer ones that
// do not (a dozen naming the console's key id with a garbage signature,
// more than one batch of the scan, and one naming a key of nobody's) are
// counted apart, as is the metric's.
func TestFixAudit12LatestVerifiedCheckpointSkipsForgeries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	keys := audit.NewKeySet(signer.PublicKey())

	none, err := audit.LatestVerifiedCheckpoint(b.ctx, b.db.Pool, keys)
	require.NoError(t, err)
	assert.False(t, none.OK)
	assert.Zero(t, none.Unverified)

	appendAll(t, b, event("one"))
	signed, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonOnDemand)
	require.NoError(t, err)
	const forgeries = 13
	var events []audit.Event
	for range forgeries + 1 {
		events = append(events, event("more"))
	}
	entries := appendAll(t, b, events...)
	for i := range forgeries {
		keyID := signer.KeyID()
		if i == forgeries-1 {
			keyID = "nobodys"
		}
		e := entries[i]
		_, err := b.db.Pool.Exec(b.ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
            VALUES ($1, $2, now(), 'interval', $3, sha256('p'), sha512('s'))`, e.Seq, e.Hash, keyID)
		require.NoError(t, err)
	}

	vc, err := audit.LatestVerifiedCheckpoint(b.ctx, b.db.Pool, keys)
	require.NoError(t, err)
	require.True(t, vc.OK)
	assert.Equal(t, signed.Seq, vc.Checkpoint.Seq, "the console's own checkpoint, not a newer forgery")
	assert.EqualValues(t, forgeries, vc.Unverified)
	assert.Equal(t, entries[forgeries-1].Seq, vc.NewestUnverified)

	reg := prometheus.NewRegistry()
	reg.MustRegister(audit.NewCheckpointCollector(b.db.Pool, keys, slog.New(slog.NewTextHandler(io.Discard, nil))))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
	}
	assert.EqualValues(t, entries[forgeries].Seq-signed.Seq, got["quarantine_audit_unsigned_entries"], "counted from the checkpoint that verifies")
	assert.EqualValues(t, forgeries, got["quarantine_audit_unverified_checkpoints"])
	assert.Contains(t, got, "quarantine_audit_checkpoint_age_seconds")
}
