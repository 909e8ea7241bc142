package web_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevAudit13RotationIsNoForgery: docs/access.md's key rotation runs
// replicas with the old and the new signing key side by side (step 3,
// "replica by replica"), each trusting both (AUDIT_PUBLIC_KEYS). But
// audit.Record checks a checkpoint it finds at the head against its own
// key only (NewKeySet(signer.PublicKey())): a checkpoint the other replica
// signed with a key this one trusts is refused as a forgery, and each
// time the permanent log gains an audit.checkpoint_refused entry, outcome
// error ("it was not written by this console"), the entry auditors are
// told means someone with the database's credentials inserted a
// checkpoint. The scheduler and quarantine_audit_unverified_checkpoints
// also count from the console's own key only. A checkpoint that verifies
// with a key the console trusts is no forgery.
func TestRevAudit13RotationIsNoForgery(t *testing.T) {
	t.Parallel()
	oldKey, newKey := signer13(t), signer13(t)
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(cfg *app.Config) {
		// The replica switched to the new key (step 3): it trusts the old
		// one, which another replica still signs with.
		cfg.AuditSigner, cfg.AuditPublicKeys = newKey, audit.NewKeySet(oldKey.PublicKey())
		cfg.CheckpointInterval, cfg.CheckpointEvery = time.Hour, 1_000_000 // on demand only, below
	}})
	ctx := context.Background()
	b.SignIn(t, "acme:auditor") // an entry to sign
	first, err := b.Checkpoints.Record(ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	require.Equal(t, newKey.KeyID(), first.KeyID, "precondition: the console signs with its new key")

	// The replica still on the old key signs the head after new entries.
	b.SignIn(t, "acme:auditor")
	cp, err := audit.Record(ctx, b.DB.Pool, oldKey, audit.ReasonInterval)
	require.NoError(t, err)
	require.Equal(t, oldKey.KeyID(), cp.KeyID)
	// This console signs the head (a tick of its scheduler, an operator's
	// console audit checkpoint): it meets the old key's checkpoint there.
	got, err := b.Checkpoints.Record(ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	assert.True(t, got.VerifySignature(audit.NewKeySet(oldKey.PublicKey(), newKey.PublicKey())) == nil, "the head is signed with a trusted key")

	refused := b.AuditCount(t, `action = 'audit.checkpoint_refused' AND reason LIKE '%' || $1 || '%'`, "this console's key is "+newKey.KeyID())
	assert.Zero(t, refused, "the console refused, as a forgery, a checkpoint signed with a key it trusts (AUDIT_PUBLIC_KEYS)")
}

func signer13(t *testing.T) *audit.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return audit.NewSigner(priv)
}
