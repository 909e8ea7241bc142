package audit_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestTrailKeepsTheMessageOnItsSubject: a message id is a message's on its
// subject. The message half of a dead letter's trail keeps the entries
// about dead letters of the same message (dead-lettered again, on the same
// subject), about a dead letter no longer kept (whose subject cannot be
// told) and about other kinds of object, and leaves out those about a dead
// letter with the same message id on another subject: another message.
func TestTrailKeepsTheMessageOnItsSubject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := testfactory.DeadLetters(t, b.db.Pool,
		testfactory.Letter{Tenant: "acme", MsgID: "evt-7", Subject: "app.acme.orders.index"},
		testfactory.Letter{Tenant: "acme", MsgID: "evt-7", Subject: "app.acme.orders.index"},
		testfactory.Letter{Tenant: "acme", MsgID: "evt-7", Subject: "app.acme.billing.index"},
	)
	first, again, billing := ids[0], ids[1], ids[2]
	about := func(action, objectType string, objectID int64) audit.Event {
		e := event(action)
		e.ObjectType, e.ObjectID, e.MessageID = objectType, strconv.FormatInt(objectID, 10), "evt-7"
		return e
	}
	entries := appendAll(t, b,
		about("deadletter.download", "dead_letter", first),   // 0: the first dead letter of the message
		about("deadletter.discard", "dead_letter", billing),  // 1: another message, on billing
		about("deadletter.download", "dead_letter", again),   // 2: the message, dead-lettered again
		about("deadletter.resolve", "dead_letter", 1<<40),    // 3: a dead letter no longer kept
		about("replay.request", "replay_request", 4),         // 4: another kind of object
		about("deadletter.download", "dead_letter", billing), // 5: another message, on billing
	)
	require.Len(t, entries, 6)

	trail, err := audit.Trail(b.ctx, b.db.Pool, "dead_letter", strconv.FormatInt(again, 10), "evt-7", "acme", 0)
	require.NoError(t, err)
	assert.Equal(t, []int64{entries[0].Seq, entries[2].Seq, entries[3].Seq, entries[4].Seq}, seqsOf(trail),
		"the trail of the message on orders: its dead letters' entries, one no longer kept, another object's; none of billing's")

	trail, err = audit.Trail(b.ctx, b.db.Pool, "dead_letter", strconv.FormatInt(billing, 10), "evt-7", "acme", 0)
	require.NoError(t, err)
	assert.Equal(t, []int64{entries[1].Seq, entries[3].Seq, entries[4].Seq, entries[5].Seq}, seqsOf(trail),
		"the trail of the message on billing: none of the orders dead letters' entries")

	trail, err = audit.Trail(b.ctx, b.db.Pool, "dead_letter", strconv.FormatInt(again, 10), "evt-7", "acme", 2)
	require.NoError(t, err)
	assert.Equal(t, []int64{entries[2].Seq, entries[3].Seq, entries[4].Seq}, seqsOf(trail),
		"another message's entries, however new, take none of the limit")
}
