package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevRetention27FailedVerificationIsAuditedAsAnError: an auditor runs
// "Verify chain" over a log in which an entry was rewritten: the page says
// the chain does not verify, and the audit log's own record of that check
// (audit.verify) says it failed (outcome error), not ok, so whoever reads
// the log later sees the check found a problem. A check that passes is
// recorded ok.
func TestRevRetention27FailedVerificationIsAuditedAsAnError(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	c, _ := b.SignIn(t, "*:auditor")
	lastVerify := func() string {
		var outcome string
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT outcome FROM audit_log WHERE action = $1 ORDER BY seq DESC LIMIT 1`, audit.ActionVerify).Scan(&outcome))
		return outcome
	}
	e, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Action: "test.entry", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	resp := b.Do(t, c, http.MethodPost, "/audit/verify", url.Values{}, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	require.Equal(t, "true", resp.Doc(t).Find(`[data-testid="verify-result"]`).AttrOr("data-ok", ""))
	assert.Equal(t, string(audit.OutcomeOK), lastVerify(), "a check that passed is recorded ok")

	tx, err := b.DB.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	for _, sql := range []string{
		`ALTER TABLE audit_log DISABLE TRIGGER USER`,
		`UPDATE audit_log SET reason = 'rewritten' WHERE seq = $1`,
		`ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_no_update_delete`,
		`ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_no_truncate`,
		`ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_continues_chain`,
	} {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, e.Seq)
		}
		_, err := tx.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	require.NoError(t, tx.Commit(ctx))

	resp = b.Do(t, c, http.MethodPost, "/audit/verify", url.Values{}, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	require.Equal(t, "false", resp.Doc(t).Find(`[data-testid="verify-result"]`).AttrOr("data-ok", ""), "precondition: the check fails")
	assert.Equal(t, string(audit.OutcomeError), lastVerify(), "the failed check is recorded as an error")
}
