package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// appendBadStub appends a globex entry that continues the chain whose
// stored hash is no hash of its content digest. The chain guard refuses
// such a row from the runtime role (migration 0070): the owner, who alone
// can, writes it with the guard off.
func appendBadStub(t *testing.T, b bundle) int64 {
	t.Helper()
	hash, digest := sha256.Sum256([]byte("not the hash")), sha256.Sum256([]byte("not the digest"))
	b.db.ExecWithoutTrigger(t, 0x5141554449540001, "audit_log", "audit_log_continues_chain", `
        INSERT INTO audit_log (seq, at, actor_email_verified, tenant, action, outcome, prev_hash, hash, hash_version, content_digest, nonce)
        SELECT seq + 1, GREATEST(at, clock_timestamp()), false, 'globex', 'test.bad', 'ok', hash, $1, 3, $2, $3
        FROM audit_log ORDER BY seq DESC LIMIT 1`, hash[:], digest[:], make([]byte, 16))
	var seq int64
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT max(seq) FROM audit_log WHERE action = 'test.bad'`).Scan(&seq))
	return seq
}

// TestFixAudit11CheckCSVStubsRefusesBeforeWriting: CheckCSVStubs finds the
// stub a signed CSV export would stop at before anything is written, as a
// conflict naming the entry and what to do; nothing when the entry is
// exported (not a stub: the verifier re-hashes it) or out of the range.
// A signed CSV export that meets it anyway ends with an "# export-error"
// record saying so, not silently.
func TestFixAudit11CheckCSVStubsRefusesBeforeWriting(t *testing.T) {
	t.Parallel()
	b := setup(t)
	signer := newSigner(t)
	appendAll(t, b, event("auth.login"))
	bad := appendBadStub(t, b)
	after := appendAll(t, b, event("auth.logout"))[0]
	head, err := audit.Record(b.ctx, b.db.Pool, signer, audit.ReasonExport)
	require.NoError(t, err)

	acme := audit.Filter{Tenants: []string{"acme"}}
	err = audit.CheckCSVStubs(b.ctx, b.db.Pool, acme, head.Seq)
	require.Error(t, err)
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err))
	msg := quarantine.ErrorMessage(err)
	assert.Contains(t, msg, fmt.Sprintf("#%d", bad))
	assert.Contains(t, msg, "console audit verify")

	assert.NoError(t, audit.CheckCSVStubs(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{audit.AllTenants}}, head.Seq),
		"an export that shows the entry does not pass over it")
	assert.NoError(t, audit.CheckCSVStubs(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{"acme"}, After: bad}, head.Seq),
		"an export starting after it does not reach it")
	assert.NoError(t, audit.CheckCSVStubs(b.ctx, b.db.Pool, audit.Filter{Tenants: []string{"nobody"}}, head.Seq),
		"an export of nothing")

	var out bytes.Buffer
	err = audit.ExportCSVSigned(b.ctx, b.db.Pool, acme, head, signer, &out)
	require.Error(t, err)
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err))
	records, rerr := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	require.NoError(t, rerr)
	last := records[len(records)-1]
	assert.Equal(t, "# export-error", last[0], "the file's last record says it stopped")
	assert.Contains(t, last[1], fmt.Sprintf("#%d", bad))
	assert.NotContains(t, out.String(), "# chain-head")
	for _, r := range records {
		// A hash may end in the digits of a seq: compare the seq field.
		assert.NotEqual(t, fmt.Sprint(after.Seq), r[0], "nothing past the entry")
	}
}

// cancelAfter cancels its context once the export has written a first
// flush: the rows left are then read under a canceled context.
type cancelAfter struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	w.cancel()
	return w.Buffer.Write(p)
}

// TestFixAudit11ExportFailingMidwaySaysSo: an export that fails after it
// began writing (here: its context ends) ends with a record (CSV) or a
// line (JSON Lines) saying it stopped, and no trailer.
func TestFixAudit11ExportFailingMidwaySaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	events := make([]audit.Event, 3000)
	for i := range events {
		events[i] = event("auth.login")
		events[i].Reason = strings.Repeat("r", 200)
	}
	_, err := audit.AppendBatchFunc(b.ctx, b.db.Pool, events)
	require.NoError(t, err)
	head, err := audit.Record(b.ctx, b.db.Pool, newSigner(t), audit.ReasonExport)
	require.NoError(t, err)

	for name, export := range map[string]func(context.Context, io.Writer) error{
		"csv": func(ctx context.Context, w io.Writer) error {
			return audit.ExportCSV(ctx, b.db.Pool, audit.Filter{}, head, w)
		},
		"jsonl": func(ctx context.Context, w io.Writer) error {
			return audit.ExportJSONL(ctx, b.db.Pool, audit.Filter{}, head, w)
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(b.ctx)
			defer cancel()
			w := &cancelAfter{cancel: cancel}
			require.Error(t, export(ctx, w))
			lines := strings.Split(strings.TrimSpace(w.String()), "\n")
			last := lines[len(lines)-1]
			if name == "csv" {
				assert.True(t, strings.HasPrefix(last, "# export-error,"), "last record: %.200s", last)
				assert.NotContains(t, w.String(), "# chain-head")
				return
			}
			var line map[string]string
			require.NoError(t, json.Unmarshal([]byte(last), &line), "last line: %.200s", last)
			assert.Contains(t, line["export_error"], "incomplete")
			assert.NotContains(t, w.String(), "chain_head")
		})
	}
}
