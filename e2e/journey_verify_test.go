package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuditorVerifiesChainInUI: the auditor presses "Verify chain" on the
// audit log and gets what `console audit verify` says: intact, the head
// (the seq and hash the database holds), and the signed checkpoint
// verified with the console's key; the check itself is in the log. Then
// the schema's owner edits an entry behind the console's back: the same
// button reports the chain broken at that entry, as the command does.
func TestAuditorVerifiesChainInUI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, stackConfig{})
	require.NotNil(t, s.OwnerDB, "the stack made its database")
	b := newBrowser(t)
	for _, email := range []string{userOncall, userApprover} {
		other := b.newSession(t, s.Console.URL, strings.Split(email, "@")[0])
		other.LoginAs(email)
	}
	signHead(t, s)

	auditor := b.newSession(t, s.Console.URL, "auditor")
	auditor.LoginAs(userAuditor)
	auditor.Open("/audit")
	auditor.Click(testID("verify-chain"))
	auditor.WaitUntil("the verification's result", `document.querySelector('[data-testid="verify-result"]')`)
	assert.Equal(t, "true", auditor.Attr(testID("verify-result"), "data-ok"))
	assert.Equal(t, "The chain is intact", auditor.Text(testID("verify-verdict")))
	head := auditor.Attr(testID("verify-head"), "title")
	var seq int64
	require.NoError(t, s.DB.QueryRow(ctx, `SELECT seq FROM audit_log WHERE hash = decode($1, 'hex')`, head).Scan(&seq))
	// The console's own checkpointer signs unsigned entries within its poll
	// when there is no checkpoint yet: on a slow machine it signs the
	// sign-ins before signHead does. Every checkpoint up to the verified
	// head verifies.
	var checkpoints int
	require.NoError(t, s.DB.QueryRow(ctx, `SELECT count(*) FROM audit_checkpoints WHERE seq <= $1`, seq).Scan(&checkpoints))
	require.Positive(t, checkpoints)
	verifies := "1 verifies"
	if checkpoints > 1 {
		verifies = fmt.Sprintf("all %d verify", checkpoints)
	}
	assert.Contains(t, auditor.Text(testID("verify-checkpoints")), verifies)
	cliSeq, cliHash := s.Console.AuditVerify(t)
	assert.GreaterOrEqual(t, cliSeq, seq, "the command verifies what the page did, and what came since")
	var cliHead []byte
	require.NoError(t, s.DB.QueryRow(ctx, `SELECT hash FROM audit_log WHERE seq = $1`, cliSeq).Scan(&cliHead))
	assert.Equal(t, hex.EncodeToString(cliHead), cliHash)
	auditor.Screenshots("intact")

	// Times in the browser's zone (here Tokyo's), UTC on hover: the
	// auditor's setting, from the menu under their name.
	auditor.TimeZone("Asia/Tokyo")
	auditor.Click(testID("user-menu") + " summary")
	auditor.Click(testID("time-zone-local"))
	auditor.ClickLoads(testID("time-zone-save"), "the audit log in the browser's zone", `document.documentElement.dataset.timeZone === "local" &&
		document.querySelector('[data-testid="audit-row"] time.ts[data-local]')`)
	first := `[data-testid="audit-row"] time.ts`
	utc, err := time.Parse(time.RFC3339, auditor.Attr(first, "datetime"))
	require.NoError(t, err)
	tokyo := utc.In(time.FixedZone("JST", 9*3600))
	assert.Contains(t, auditor.Text(first), tokyo.Format("2006-01-02 15:04:05"), "shown in the browser's zone")
	assert.Equal(t, utc.UTC().Format("2006-01-02 15:04:05")+" UTC", auditor.Attr(first, "title"), "UTC on hover")
	auditor.Screenshot("local-time")

	// The check is in the log.
	auditor.Open("/audit?" + url.Values{"action": {"audit.verify"}}.Encode())
	auditor.WaitUntil("the verification in the log", `document.querySelectorAll('[data-testid="audit-row"]').length === 1`)
	assert.True(t, hasRow(auditRows(auditor), userAuditor, "audit.verify", "ok"))

	// An entry edited behind the console's back.
	tx, err := s.OwnerDB.Begin(ctx)
	require.NoError(t, err)
	for _, sql := range []string{
		`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update_delete`,
		`UPDATE audit_log SET reason = 'nothing to see' WHERE seq = 2`,
		`ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_update_delete`,
	} {
		_, err := tx.Exec(ctx, sql)
		require.NoError(t, err, sql)
	}
	require.NoError(t, tx.Commit(ctx))
	auditor.Open("/audit")
	auditor.Click(testID("verify-chain"))
	auditor.WaitUntil("the verification's result", `document.querySelector('[data-testid="verify-result"]')`)
	assert.Equal(t, "false", auditor.Attr(testID("verify-result"), "data-ok"))
	assert.Equal(t, "The chain is broken at entry 2", auditor.Text(testID("verify-verdict")))
	cmd := exec.Command(consoleBinary(t), "audit", "verify")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+s.Console.DatabaseURL, "AUDIT_PUBLIC_KEYS="+s.Console.AuditPublicKey)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the command fails too: %s", out)
	assert.Contains(t, string(out), "seq 2:", "both name the same entry")
	assert.Contains(t, auditor.Text(testID("verify-problem")), "seq 2:")
	auditor.Screenshots("broken")
	var failed int
	require.NoError(t, s.DB.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'audit.verify' AND outcome = 'error'`).Scan(&failed))
	assert.Equal(t, 1, failed, "the failed check is in the log")
}

// signHead signs the audit chain's head now, as `console audit checkpoint`
// does with the console's key.
func signHead(t *testing.T, s *stack) {
	t.Helper()
	cmd := exec.Command(consoleBinary(t), "audit", "checkpoint")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+s.Console.DatabaseURL,
		"AUDIT_SIGNING_KEY_FILE="+strings.TrimSuffix(s.Console.AuditPublicKey, ".pub"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "console audit checkpoint: %s", out)
	require.Contains(t, string(out), "audit checkpoint: seq ", "%s", out)
}
