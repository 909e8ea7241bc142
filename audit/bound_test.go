package audit_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// TestAuditFieldsBounded appends events whose every text field is a
// megabyte (what a hostile client or producer can send in a header or a
// dead letter) and checks that each stored field stays within its bound,
// says it was cut, is still valid UTF-8, and that the chain verifies.
func TestAuditFieldsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	huge := strings.Repeat("é", 1<<19) // 1 MiB of two-byte characters: cuts must respect them
	big := map[string]string{"blob": strings.Repeat("x", 1<<20)}
	e := audit.Event{
		Actor:  quarantine.Actor{Issuer: huge, Subject: huge, Email: huge, EmailVerified: true},
		Tenant: huge, Action: "x." + huge, ObjectType: huge, ObjectID: huge, MessageID: huge,
		OperationID: huge, Reason: huge, Outcome: audit.OutcomeDenied, Before: big, After: big,
		RequestMeta: quarantine.RequestMeta{RequestID: huge, RemoteAddr: huge, UserAgent: huge},
	}
	single := appendAll(t, b, e)[0]
	batch, err := appendBatch(b, e, e)
	require.NoError(t, err)

	bounds := map[string]int{
		"actor_issuer": 512, "actor_subject": 512, "actor_email": 320, "tenant": 256, "action": 128,
		"object_type": 64, "object_id": 512, "message_id": 512, "operation_id": 512, "request_id": 64,
		"reason": 4096, "remote_addr": 64, "user_agent": 512,
	}
	for _, entry := range append([]audit.Entry{single}, batch...) {
		fields := map[string]string{
			"actor_issuer": entry.Actor.Issuer, "actor_subject": entry.Actor.Subject, "actor_email": entry.Actor.Email,
			"tenant": entry.Tenant, "action": entry.Action, "object_type": entry.ObjectType, "object_id": entry.ObjectID,
			"message_id": entry.MessageID, "operation_id": entry.OperationID, "request_id": entry.RequestID,
			"reason": entry.Reason, "remote_addr": entry.RemoteAddr, "user_agent": entry.UserAgent,
		}
		for name, v := range fields {
			assert.LessOrEqual(t, len(v), bounds[name], "seq %d %s", entry.Seq, name)
			assert.True(t, utf8.ValidString(v), "seq %d %s is cut on a character boundary", entry.Seq, name)
			if name == "message_id" || name == "operation_id" {
				// Ids are keyed (audit.MessageKey): prefix, "…#", hash of the whole.
				assert.True(t, quarantine.IsBoundedKey(v), "seq %d %s says it was keyed: %q", entry.Seq, name, v)
				continue
			}
			assert.Contains(t, v, "[cut, ", "seq %d %s says it was cut", entry.Seq, name)
		}
		assert.Contains(t, entry.Reason, "1048576 bytes in all", "the cut says how long the value was")
		assert.True(t, strings.HasPrefix(entry.Reason, "éé"), "the start is kept")
		for name, j := range map[string][]byte{"before": entry.Before, "after": entry.After} {
			assert.Less(t, len(j), 200, "seq %d %s is replaced by a summary", entry.Seq, name)
			assert.Contains(t, string(j), `"cut":true`, "seq %d %s", entry.Seq, name)
			assert.Contains(t, string(j), `"sha256":`, "seq %d %s", entry.Seq, name)
		}
	}
	// What the database holds is what Append returned, and within the
	// table's own CHECK (which would have refused the insert otherwise).
	var longest int
	require.NoError(t, b.db.Pool.QueryRow(b.ctx, `SELECT max(octet_length(reason)) FROM audit_log`).Scan(&longest))
	assert.Equal(t, 4096, longest)
	stored, err := audit.Get(b.ctx, b.db.Pool, single.Seq, nil)
	require.NoError(t, err)
	assert.Equal(t, single.Reason, stored.Reason)
	assert.Equal(t, single.Hash, stored.Hash)
	requireIntact(t, b, 3)

	// Values within their bound are stored exactly as given.
	short := event("short.values")
	short.Reason = strings.Repeat("r", 4096)
	short.UserAgent = strings.Repeat("u", 512)
	got := appendAll(t, b, short)[0]
	assert.Equal(t, short.Reason, got.Reason)
	assert.Equal(t, short.UserAgent, got.UserAgent)
}

// appendBatch appends events with AppendBatch in a transaction of its own.
func appendBatch(b bundle, events ...audit.Event) ([]audit.Entry, error) {
	var out []audit.Entry
	err := pgx.BeginFunc(b.ctx, b.db.Pool, func(tx pgx.Tx) error {
		var err error
		out, err = audit.AppendBatch(b.ctx, tx, events)
		return err
	})
	return out, err
}
