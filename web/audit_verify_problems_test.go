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

// TestAuditVerifyPageListsEveryProblem: verify goes on past the first
// problem and reports each (an edit made after a break is not hidden by
// it); the page said only the first, as before, so an auditor checking in
// the console learned less than one running `console audit verify`.
func TestAuditVerifyPageListsEveryProblem(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	var seqs []int64
	for range 4 {
		e, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Action: "test.entry", Outcome: audit.OutcomeOK})
		require.NoError(t, err)
		seqs = append(seqs, e.Seq)
	}
	tx, err := b.DB.OwnerPool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	for _, sql := range []string{
		`ALTER TABLE audit_log DISABLE TRIGGER USER`,
		`UPDATE audit_log SET reason = 'rewritten' WHERE seq = ANY($1)`,
		`ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_no_update_delete`,
		`ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_no_truncate`,
		`ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_continues_chain`,
	} {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, []int64{seqs[1], seqs[3]})
		}
		_, err := tx.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	require.NoError(t, tx.Commit(ctx))

	c, _ := b.SignIn(t, "*:auditor")
	resp := b.Do(t, c, http.MethodPost, "/audit/verify", url.Values{}, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	assert.Equal(t, "false", d.Find(`[data-testid="verify-result"]`).AttrOr("data-ok", ""))
	assert.Contains(t, d.Find(`[data-testid="verify-problem"]`).Text(), "seq ")
	more := d.Find(`[data-testid="verify-more-problems"] li`)
	require.Equal(t, 1, more.Length(), "the second rewritten entry is reported too")
	assert.Contains(t, more.Text(), "seq ")
}
