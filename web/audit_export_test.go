package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestAuditExportEndsAtTheNextCheckpoint: a tenant auditor's export of an
// old entry ends at the first checkpoint signed with the console's key
// after it, not at the head signed for the export, so the newer log is
// not in the file as stubs. A checkpoint the runtime role inserted at the
// entry, whose signature does not verify, is not the one it ends at. The
// file verifies with the console's public key.
func TestAuditExportEndsAtTheNextCheckpoint(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	var old audit.Entry
	// The forged checkpoint goes in with the entry: no recorder can sign
	// the entry first (Record waits for the chain's lock).
	require.NoError(t, pgx.BeginFunc(ctx, b.Pool, func(tx pgx.Tx) error {
		var err error
		if old, err = audit.Append(ctx, tx, audit.Event{Tenant: "acme", Action: "test.old", Outcome: audit.OutcomeOK}); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
            VALUES ($1, $2, now(), 'count', $3, $4, sha512('s'))`, old.Seq, old.Hash, b.Signer.KeyID(), []byte(b.Signer.PublicKey()))
		return err
	}))
	next, err := audit.Record(ctx, b.Pool, b.Signer, audit.ReasonCount)
	require.NoError(t, err)
	for range 30 {
		_, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "globex", Action: "test.newer", Outcome: audit.OutcomeOK})
		require.NoError(t, err)
	}

	auditor, _ := b.SignIn(t, "acme:auditor")
	resp := b.Do(t, auditor, http.MethodGet, "/audit/export.jsonl?action=test.old", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	res, err := audit.VerifyExport(strings.NewReader(resp.Body), audit.NewKeySet(b.Signer.PublicKey()))
	require.NoError(t, err)
	require.True(t, res.OK(), res.String())
	assert.True(t, res.ExportSigned, "the export itself is signed with the checkpoint key: %s", res)
	assert.Equal(t, int64(1), res.Entries)
	assert.Greater(t, res.Head.Seq, old.Seq, "not the forged checkpoint at the entry")
	assert.LessOrEqual(t, res.Head.Seq, next.Seq, "the first checkpoint after the entry, not the head")
	assert.Equal(t, fmt.Sprintf("%d:%s", res.Head.Seq, res.Head.HashHex()), resp.Header.Get("Audit-Chain-Head"))
	lines := strings.Count(resp.Body, "\n")
	assert.Equal(t, int(res.Head.Seq-old.Seq)+2, lines, "the entry, a stub for each entry up to the checkpoint, the trailer")
	assert.NotContains(t, resp.Body, "test.newer", "nothing past the checkpoint")
}
