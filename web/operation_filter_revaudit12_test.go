package web_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevAudit12OperationIDFindsEveryReplayOfIt: the auditor is asked
// "was operation op-42 replayed, and how often?". One operation id lives
// under several message ids (a producer that retried with a fresh
// Nats-Msg-Id dead-letters twice with the same Dlq-Operation-Id; the
// replay ledger keys same_operation by it, docs/replay.md), and every
// audit row about a replay item records operation_id (docs/access.md
// "Every row about a dead letter names its message id and operation id").
// Yet the audit page and its exports have no operation filter
// (web/audit_list.go auditFilterParams, audit.Filter): ?operation_id= is
// dropped without a word, the page lists every entry, and the export
// labelled with the search exports the whole log. The auditor must know
// every message id the operation was ever sent under to find its replays.
func TestRevAudit12OperationIDFindsEveryReplayOfIt(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	const op, other = "revaudit12-op-42", "revaudit12-op-other"
	for _, e := range []audit.Event{
		{Tenant: "acme", Action: "replay.item.replayed", ObjectType: "dead_letter", ObjectID: "1", MessageID: "msg-first-try", OperationID: op,
			Reason: "revaudit12-first-replay", Outcome: audit.OutcomeOK},
		{Tenant: "acme", Action: "replay.item.replayed", ObjectType: "dead_letter", ObjectID: "2", MessageID: "msg-retry", OperationID: op,
			Reason: "revaudit12-second-replay", Outcome: audit.OutcomeOK},
		{Tenant: "acme", Action: "replay.item.replayed", ObjectType: "dead_letter", ObjectID: "3", MessageID: "msg-unrelated", OperationID: other,
			Reason: "revaudit12-unrelated-replay", Outcome: audit.OutcomeOK},
	} {
		_, err := audit.AppendFunc(ctx, b.Pool, e)
		require.NoError(t, err)
	}
	auditor, _ := b.SignIn(t, "acme:auditor")
	q := url.Values{"operation_id": {op}}.Encode()

	page := b.Do(t, auditor, http.MethodGet, "/audit?"+q, nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.True(t, strings.Contains(page.Body, "revaudit12-first-replay"), "the first replay of the operation is listed")
	assert.True(t, strings.Contains(page.Body, "revaudit12-second-replay"), "its replay under another message id is listed")
	assert.False(t, strings.Contains(page.Body, "revaudit12-unrelated-replay"),
		"the audit page searched for operation %s lists another operation's replay: the operation id is not a filter", op)

	resp := b.Do(t, auditor, http.MethodGet, "/audit/export.csv?"+q, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	records, err := csv.NewReader(strings.NewReader(resp.Body)).ReadAll()
	require.NoError(t, err)
	var ops []string
	for _, rec := range records[1:] {
		if strings.HasPrefix(rec[0], "#") || rec[7] == "" { // trailers, stubs
			continue
		}
		ops = append(ops, rec[7]+" "+rec[11])
	}
	for _, o := range ops {
		assert.True(t, strings.HasSuffix(o, " "+op), "the export of the search for operation %s holds %q", op, o)
	}
}
