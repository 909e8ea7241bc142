package replay_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// Written from docs/replay.md ("Recomputing an intent"), not from the
// package: an auditor's own code.

func auditorField(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

func auditorHash(fields ...string) []byte {
	h := sha256.New()
	for _, f := range fields {
		auditorField(h, f)
	}
	return h.Sum(nil)
}

func unhex(t *testing.T, s any) string {
	t.Helper()
	b, err := hex.DecodeString(fmt.Sprint(s))
	require.NoError(t, err)
	return string(b)
}

// loggedRow is an audit_log row as an export holds it.
type loggedRow struct {
	tenant, objectID, messageID, operationID string
	after                                    map[string]any
}

func (b *replayBundle) loggedRows(t *testing.T, where string, args ...any) []loggedRow {
	t.Helper()
	rows, err := b.db.Pool.Query(context.Background(), `SELECT tenant, object_id, message_id, operation_id, coalesce(after, 'null')
        FROM audit_log WHERE `+where+` ORDER BY seq`, args...)
	require.NoError(t, err)
	defer rows.Close()
	var out []loggedRow
	for rows.Next() {
		var r loggedRow
		var after []byte
		require.NoError(t, rows.Scan(&r.tenant, &r.objectID, &r.messageID, &r.operationID, &after))
		d := json.NewDecoder(strings.NewReader(string(after)))
		d.UseNumber() // the rate as written, digit for digit
		require.NoError(t, d.Decode(&r.after))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestAuditLogRecomputesTheIntent: an auditor recomputes the intent an
// approver approved from the audit log alone, by the documented encoding:
// the request's replay.request row and the item rows the approval wrote,
// after the requester edited a payload (a new intent) and with a
// correlation id longer than the log keeps (the item hash binds it
// whole). Each item's headers hash is the one of the headers it sends,
// and the worker's replayed row names the edited payload's hash.
func TestAuditLogRecomputesTheIntent(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	long := strings.Repeat("c", 700)
	ids := testfactory.DeadLetters(t, b.db.Pool,
		testfactory.Letter{ItemType: "accounts.permission_grant", MsgID: "intent-log-1", CorrelationID: "corr-1", Principal: "user:7",
			Payload: []byte(`{"grant":"admin"}`), Headers: nats.Header{"X-Route": {"eu-1"}, "X-Trace": {"a", "b"}}},
		testfactory.Letter{ItemType: "accounts.permission_grant", MsgID: "intent-log-2", CorrelationID: long, Principal: "user:8",
			Payload: []byte(`{"grant":"viewer"}`), Headers: nats.Header{"X-Route": {"us-2"}}})
	req := b.request(t, ids, replay.SubmitInput{Reason: "grants lost in the outage"})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	edited := []byte(`{"grant":"editor"}`)
	require.NoError(t, b.replays.EditPayload(ctx, req.ID, ids[0], oncall, replay.PayloadEdit{Payload: edited, Reason: "editor is enough"},
		quarantine.RequestMeta{}))
	req, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	_, err = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)

	requested := b.loggedRows(t, `action = 'replay.request' AND object_type = 'replay_request' AND object_id = $1`, fmt.Sprint(req.ID))
	require.Len(t, requested, 1)
	r := requested[0]
	approved := b.loggedRows(t, `action = 'replay.item.approved' AND (after->>'request')::bigint = $1`, req.ID)
	require.Len(t, approved, 2)
	sort.Slice(approved, func(i, j int) bool {
		pi, _ := approved[i].after["position"].(json.Number).Int64()
		pj, _ := approved[j].after["position"].(json.Number).Int64()
		return pi < pj
	})

	rate, err := r.after["rate"].(json.Number).Float64()
	require.NoError(t, err)
	fields := []string{"quarantine-replay-intent-v2", r.tenant, fmt.Sprint(r.after["class"]), fmt.Sprint(r.after["policy_version"]),
		fmt.Sprint(math.Float64bits(rate))}
	if note := fmt.Sprint(r.after["reconciliation_note"]); note != "" {
		fields = append(fields, "reconciliation-note", note)
	}
	for _, row := range approved {
		fields = append(fields, unhex(t, row.after["item_sha256"]))
	}
	intent := hex.EncodeToString(auditorHash(fields...))
	assert.Equal(t, req.IntentHex(), intent, "the intent recomputed from the log is the one approved")
	approve := b.loggedRows(t, `action = 'replay.approve' AND object_id = $1`, fmt.Sprint(req.ID))
	require.Len(t, approve, 1)
	assert.Equal(t, intent, approve[0].after["intent"], "and the approval's row names it")

	items, err := b.replays.Items(ctx, req.ID, 10)
	require.NoError(t, err)
	require.Len(t, items, 2)
	for i, row := range approved {
		it := items[i]
		headers := []string{"quarantine-replay-headers-v1"}
		for _, hv := range it.Headers {
			headers = append(headers, hv.Name+"\x00"+hv.NameEncoding+"\x00"+hv.Value+"\x00"+hv.Encoding)
		}
		require.NotEmpty(t, it.Headers)
		assert.Equal(t, hex.EncodeToString(auditorHash(headers...)), row.after["headers_sha256"], "the headers item %d sends", it.DeadLetterID)
		// The item's hash from the row's values, the correlation id whole
		// (the row keeps 512 bytes of a longer one).
		corr := fmt.Sprint(row.after["correlation_id"])
		if it.CorrelationID == long {
			assert.Equal(t, dlq.BoundedKey(long, 512), corr, "a long correlation id is cut in the row")
			corr = long
		}
		item := auditorHash("quarantine-replay-item-v1", row.objectID, row.messageID, row.operationID, corr, fmt.Sprint(row.after["subject"]),
			unhex(t, row.after["payload_sha256"]), unhex(t, row.after["headers_sha256"]))
		assert.Equal(t, row.after["item_sha256"], hex.EncodeToString(item), "item %s", row.objectID)
	}
	sum := sha256.Sum256(edited)
	assert.Equal(t, hex.EncodeToString(sum[:]), approved[0].after["payload_sha256"], "the edited payload was approved")

	reval := newResponder(t, b, "revalidate.acme", func(replay.RevalidateQuery) (bool, string, bool) { return true, "", true })
	run(t, b.worker(t, replay.WorkerConfig{}, reval))
	b.waitStatus(t, req.ID, replay.StatusDone)
	replayed := b.loggedRows(t, `action = 'replay.item.replayed' AND object_type = 'dead_letter' AND object_id = $1`, fmt.Sprint(ids[0]))
	require.Len(t, replayed, 1)
	assert.Equal(t, hex.EncodeToString(sum[:]), replayed[0].after["payload_sha256"], "the worker published the edited payload")
}

// TestReconciliationNoteIsBounded: a note longer than the request's audit
// row holds whole is refused (invalid), and nothing is submitted.
func TestReconciliationNoteIsBounded(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "note-bound-1", nil, "{}")
	batch, _ := b.draft(t, oncall, id)
	_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "r", ReconciliationNote: strings.Repeat("<", replay.MaxReconciliationNoteBytes+1)},
		quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err))
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "r", ReconciliationNote: strings.Repeat("<", replay.MaxReconciliationNoteBytes)},
		quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
}
