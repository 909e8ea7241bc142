package web_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixAudit11ExportRefusalIsActionableAndAudited: the signed CSV
// export that would stop at another tenant's entry whose stored hash is
// not its digest's is refused before anything is sent, with a page the
// tenant's auditor can act on (the entry's seq, who runs `console audit
// verify`, the JSON Lines export); the failure is audited beside the
// export's own row; the JSON Lines export of the same range is whole.
func TestFixAudit11ExportRefusalIsActionableAndAudited(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	_, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "acme", Action: "test.mine", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	// The bad row, continuing the chain, with a hash that is no hash of
	// its digest: the chain guard refuses it from the runtime role
	// (migration 0070), so the owner writes it with the guard off.
	hash, digest := sha256.Sum256([]byte("not the hash")), sha256.Sum256([]byte("not the digest"))
	b.DB.ExecWithoutTrigger(t, 0x5141554449540001, "audit_log", "audit_log_continues_chain", `
        INSERT INTO audit_log (seq, at, actor_email_verified, tenant, action, outcome, prev_hash, hash, hash_version, content_digest, nonce)
        SELECT seq + 1, GREATEST(at, clock_timestamp()), false, 'globex', 'test.bad', 'ok', hash, $1, 3, $2, $3
        FROM audit_log ORDER BY seq DESC LIMIT 1`, hash[:], digest[:], make([]byte, 16))
	var bad int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT max(seq) FROM audit_log WHERE action = 'test.bad'`).Scan(&bad))

	auditor, who := b.SignIn(t, "acme:auditor")
	resp := b.Do(t, auditor, http.MethodGet, "/audit/export.csv", nil, nil)
	assert.Equal(t, http.StatusConflict, resp.Status)
	assert.Empty(t, resp.Header.Get("Content-Disposition"), "no download")
	assert.Contains(t, resp.Body, fmt.Sprintf("#%d", bad))
	assert.Contains(t, resp.Body, "console audit verify")
	assert.Contains(t, resp.Body, "JSON Lines")
	assert.Equal(t, 1, b.AuditCount(t, `action = 'audit.export' AND outcome = 'error' AND tenant = 'acme' AND actor_subject = $1
        AND reason LIKE '%failed: %'`, who.Subject), "the failure is audited in the tenant exported")

	resp = b.Do(t, auditor, http.MethodGet, "/audit/export.jsonl", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	assert.Contains(t, resp.Body, `"chain_head"`, "the JSON Lines export runs to its end")
}

// TestFixAudit11ExportCutMidwayIsAborted: an export whose database read
// fails after the file began to be sent (its backend terminated) is not a
// complete download: the response is cut, reading it fails, and what
// arrived ends with the line saying the export stopped.
func TestFixAudit11ExportCutMidwayIsAborted(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	events := make([]audit.Event, 20000)
	for i := range events {
		events[i] = audit.Event{Tenant: "acme", Action: "test.bulk", Outcome: audit.OutcomeOK, Reason: strings.Repeat("r", 1000)}
	}
	_, err := audit.AppendBatchFunc(ctx, b.Pool, events)
	require.NoError(t, err)

	auditor, _ := b.SignIn(t, "acme:auditor")
	req, err := http.NewRequest(http.MethodGet, b.URL()+"/audit/export.jsonl", nil)
	require.NoError(t, err)
	resp, err := auditor.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := bufio.NewReaderSize(resp.Body, 1<<10)
	_, err = r.Peek(1 << 10)
	require.NoError(t, err, "the export began")

	var terminated bool
	for deadline := time.Now().Add(10 * time.Second); !terminated && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT coalesce(bool_or(pg_terminate_backend(pid)), false) FROM pg_stat_activity
            WHERE query LIKE '%AS selected FROM audit_log%' AND pid <> pg_backend_pid()`).Scan(&terminated))
	}
	require.True(t, terminated, "the export's query was found and ended")

	body, readErr := io.ReadAll(r)
	require.Error(t, readErr, "the download fails where it is read; %d bytes arrived", len(body))
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
	assert.Contains(t, last["export_error"], "incomplete", "what arrived says it stopped")
	assert.NotContains(t, string(body), `"chain_head"`)
}
