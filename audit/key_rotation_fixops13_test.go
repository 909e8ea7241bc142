package audit_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestFixOps13RotationHeadSignedWithTheNextKeyCounts: a checkpointer
// whose CheckpointConfig.Trusted holds the next key (AUDIT_PUBLIC_KEYS
// during a rotation) takes a head signed with it as signed on every path
// that signs the head: Record, RecordIn (a purge's transaction) and its
// Keys (the collector's and the audit page's set); one signed with a key
// nobody trusts is still refused and audited.
func TestFixOps13RotationHeadSignedWithTheNextKeyCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old, next, stranger := newSigner(t), newSigner(t), newSigner(t)
	cp := audit.NewCheckpointer(b.db.Pool, old, audit.CheckpointConfig{Trusted: audit.NewKeySet(next.PublicKey())},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	assert.ElementsMatch(t, []string{old.KeyID(), next.KeyID()}, cp.Keys().IDs())

	appendAll(t, b, event("one"))
	signed, err := audit.Record(b.ctx, b.db.Pool, next, audit.ReasonOnDemand)
	require.NoError(t, err)
	got, err := cp.Record(b.ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	assert.Equal(t, signed.KeyID, got.KeyID, "the next key's checkpoint is the head's")
	require.NoError(t, pgx.BeginFunc(b.ctx, b.db.Pool, func(tx pgx.Tx) error {
		got, err = cp.RecordIn(b.ctx, tx, audit.ReasonOnDemand)
		return err
	}))
	assert.Equal(t, next.KeyID(), got.KeyID)
	vc, err := audit.LatestVerifiedCheckpoint(b.ctx, b.db.Pool, cp.Keys())
	require.NoError(t, err)
	assert.True(t, vc.OK)
	assert.Zero(t, vc.Unverified)

	appendAll(t, b, event("two"))
	_, err = audit.Record(b.ctx, b.db.Pool, stranger, audit.ReasonOnDemand)
	require.NoError(t, err)
	got, err = cp.Record(b.ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	assert.Equal(t, old.KeyID(), got.KeyID, "a stranger's checkpoint is refused and the head signed anew")
	var refused int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT count(*) FROM audit_log WHERE action = $1`, audit.ActionCheckpointRefused).Scan(&refused))
	assert.Equal(t, 1, refused)
}
