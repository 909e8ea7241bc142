package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevAudit12AuditPageShowsNoForgedCheckpointAsSigned: the audit page
// says "Last signed checkpoint: seq N · hash … · signed <at> with key <id>"
// of the newest row of audit_checkpoints (web/audit_list.go
// latestCheckpoint → audit.LatestCheckpoint), whose signature nobody
// checks. Anyone with the runtime role's credentials may insert one (the
// trigger of migration 0025 checks its seq and hash only): a forgery at
// the head, dated 2999 and naming a key id of their choice, is what the
// auditor reads as the log's signed state, "0 entries since", while
// `console audit verify` calls the chain BROKEN at it. The page should
// show the newest checkpoint that verifies with the console's keys (and
// say when a newer one does not).
func TestRevAudit12AuditPageShowsNoForgedCheckpointAsSigned(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	auditor, _ := b.SignIn(t, "*:auditor")
	// The entry and its forged checkpoint in one transaction: the entry
	// holds the chain's lock until both are in, which every checkpoint
	// recorder takes first, so the console's own cannot sign it before
	// the forgery takes its seq (it may refuse the forgery after, and
	// sign a newer head: the page must show neither as the forgery).
	// Migration 0054 now refuses a checkpoint dated ahead of the clock;
	// one inserted before it is still there, and must not show as signed.
	var e audit.Entry
	b.DB.ExecWithoutTriggerAfter(t, func(ctx context.Context, tx pgx.Tx) (err error) {
		e, err = audit.Append(ctx, tx, audit.Event{Action: "test.entry", Outcome: audit.OutcomeOK})
		return err
	}, "audit_checkpoints", "audit_checkpoints_not_ahead", `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
        SELECT seq, hash, '2999-01-01T00:00:00Z', 'interval', 'forgedkey0000000', sha256('p'), sha512('s')
        FROM audit_log ORDER BY seq DESC LIMIT 1`)
	var forgedSeq int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT seq FROM audit_checkpoints WHERE key_id = 'forgedkey0000000'`).Scan(&forgedSeq))
	require.Equal(t, e.Seq, forgedSeq, "the forgery signs the entry appended with it")

	page := b.Do(t, auditor, http.MethodGet, "/audit", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	shown := strings.TrimSpace(page.Doc(t).Find(`[data-testid="audit-checkpoint"]`).Text())
	// The forgery's date as the page writes dates ("2999-01-01 00:00:00"),
	// not "2999" anywhere: a real checkpoint's hash may hold those digits
	// (CI11: "f2999fa1…").
	assert.False(t, strings.Contains(shown, "forgedkey0000000") || strings.Contains(shown, "2999-01-01"),
		"the audit page presents a checkpoint whose signature does not verify as the last signed one: %q", shown)
}
