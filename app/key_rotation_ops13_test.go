package app_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestRevOps13KeyRotationIsNoForgery: docs/access.md's rotation, step 3
// ("switch the signing key, replica by replica"), with step 2 done: this
// replica still signs with the old key and has the new key's public half
// in AUDIT_PUBLIC_KEYS; a replica already switched signs the head with the
// new key. This replica's checkpointer (audit.Record, which trusts the
// signer's key alone) then takes that checkpoint for a forgery: it appends
// audit.checkpoint_refused (outcome error) to the audit log, and its
// collector (given the signing key alone, app/app.go:272) counts it in
// quarantine_audit_unverified_checkpoints, the tamper signal. Every
// rotation so writes false "forged checkpoint" entries into the
// tamper-evident log. Both should trust AUDIT_PUBLIC_KEYS too, as the
// audit page's Verify chain does (Deps.AuditKeys).
func TestRevOps13KeyRotationIsNoForgery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := natstest.StartWithOptions(t, t.TempDir(), nil)
	_, newPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	rotated := audit.NewSigner(newPriv)
	cfg := consoleConfig(t, srv.ClientURL())
	cfg.AuditPublicKeys = audit.NewKeySet(rotated.PublicKey()) // step 2: every replica knows the new key
	cfg.MetricsAddr = "127.0.0.1:0"
	a, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(a.Close)

	_, err = audit.AppendFunc(ctx, a.Jobs, audit.Event{
		Actor:  quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-ann", Email: "ann@example.com"},
		Tenant: "acme", Action: audit.ActionExport, Outcome: audit.OutcomeOK,
	})
	require.NoError(t, err)
	// A replica already switched to the new key signs the head.
	_, err = audit.Record(ctx, a.Jobs, rotated, audit.ReasonOnDemand)
	require.NoError(t, err)

	resp, err := http.Get(a.MetricsURL())
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	m := regexp.MustCompile(`(?m)^quarantine_audit_unverified_checkpoints (\S+)$`).FindStringSubmatch(string(body))
	require.NotNil(t, m, "the series is exported")
	assert.Equal(t, "0", m[1], "a checkpoint signed with a key in AUDIT_PUBLIC_KEYS is counted as a forgery")

	// This replica's next checkpoint.
	_, err = a.Checkpoints.Record(ctx, audit.ReasonOnDemand)
	require.NoError(t, err)
	var refused int
	require.NoError(t, a.Jobs.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = $1`, audit.ActionCheckpointRefused).Scan(&refused))
	assert.Zero(t, refused, "the audit log says a checkpoint signed with a trusted key was refused as forged")
}
