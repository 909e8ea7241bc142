package audit_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// A dead letter keeps its message id whole, however long (dlq/bound.go:
// "A longer id is stored, found by exact value and replayed whole"), but
// an audit row cuts its message_id at 512 bytes with a marker
// (audit/bound.go). The auditor's Message filter and a dead letter's
// trail look the id up by equality, with the id as the dead letter has
// it: every row about a message whose id is longer than 512 bytes is
// unfindable by it. A producer chooses the id (Nats-Msg-Id), so a hostile
// one can keep its messages' downloads, replays and discards out of every
// message search.

func longMessageID(tail string) string {
	return "order-" + strings.Repeat("0123456789", 60) + tail // 606 + len(tail) bytes
}

// TestRevAudit11LongMessageIDFilterFindsItsEntries: the Message filter and
// Trail, given a message id of 600 bytes exactly as the dead letter holds
// it, find the rows that name it.
func TestRevAudit11LongMessageIDFilterFindsItsEntries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msgID := longMessageID("-a")
	e := event("deadletter.download")
	e.ObjectType, e.ObjectID, e.MessageID = "dead_letter", "83", msgID
	entries := appendAll(t, b, e, event("auth.login"))

	page, err := audit.List(b.ctx, b.db.Pool, audit.Filter{MessageID: msgID})
	require.NoError(t, err)
	assert.Equal(t, []int64{entries[0].Seq}, seqsOf(page.Entries),
		"the Message filter, given the message's id as its dead letter has it, finds the row naming it (stored as %q)", entries[0].MessageID)

	// Another dead letter of the same message (dead-lettered again): its
	// trail reaches the first one's rows through the message id.
	trail, err := audit.Trail(b.ctx, b.db.Pool, "dead_letter", "84", msgID, "acme", 0)
	require.NoError(t, err)
	assert.Equal(t, []int64{entries[0].Seq}, seqsOf(trail), "the trail of another dead letter of the message shows the download")
}

// TestRevAudit11LongMessageIDsStayApart: two messages whose ids share
// their first 600 bytes and are as long as each other are recorded under
// one and the same message_id, so the log cannot tell whose row is whose,
// and the Message filter for one finds exactly its own rows.
func TestRevAudit11LongMessageIDsStayApart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, c := longMessageID("-a"), longMessageID("-b")
	ea, ec := event("deadletter.discard"), event("deadletter.discard")
	ea.ObjectType, ea.ObjectID, ea.MessageID = "dead_letter", "1", a
	ec.ObjectType, ec.ObjectID, ec.MessageID = "dead_letter", "2", c
	entries := appendAll(t, b, ea, ec)

	assert.NotEqual(t, entries[0].MessageID, entries[1].MessageID,
		"two different messages must not be recorded under one message id")

	page, err := audit.List(b.ctx, b.db.Pool, audit.Filter{MessageID: a})
	require.NoError(t, err)
	assert.Equal(t, []int64{entries[0].Seq}, seqsOf(page.Entries), "the filter for message a finds a's row, and only it")
}
