package audit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestTrailReadsOnlyTheObjectsTenant: a dead letter's trail (its page)
// holds the entries of its own tenant only. An entry outside any tenant
// naming the same object (a refusal of an id nobody had yet, as earlier
// releases wrote them) is for auditors of every tenant, and one of another
// tenant is that tenant's: neither is on the page of acme's dead letter
// 7, whoever may read that page. The message half keeps to the tenant too.
func TestTrailReadsOnlyTheObjectsTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	on := func(tenant, action, objectID, msgID string) audit.Event {
		e := event(action)
		e.Tenant, e.ObjectType, e.ObjectID, e.MessageID = tenant, "dead_letter", objectID, msgID
		return e
	}
	entries := appendAll(t, b,
		on("", "replay.draft", "7", ""),                // 1: outside any tenant
		on("acme", "deadletter.discard", "7", "m-7"),   // 2: acme's, of the dead letter
		on("globex", "authz.denied", "7", ""),          // 3: another tenant's
		on("acme", "replay.item.replayed", "9", "m-7"), // 4: acme's, naming its message
		on("", "replay.draft", "9", "m-7"),             // 5: outside any tenant, naming its message
	)
	require.Len(t, entries, 5)

	trail, err := audit.Trail(b.ctx, b.db.Pool, "dead_letter", "7", "m-7", "acme", 0)
	require.NoError(t, err)
	assert.Equal(t, []int64{entries[1].Seq, entries[3].Seq}, seqsOf(trail), "acme's entries of the dead letter and of its message, oldest first")

	trail, err = audit.Trail(b.ctx, b.db.Pool, "dead_letter", "7", "", "acme", 0)
	require.NoError(t, err)
	assert.Equal(t, []int64{entries[1].Seq}, seqsOf(trail), "without a message id, the object's own entries of acme")
}

// TestTrailLeavesOutObjectsNamedLikeTheMessage: the message half of a
// trail reads the message_id column only. An entry of the tenant about
// another object whose id happens to equal the message id (dead letter
// #17 for a message "17", an audit export "csv" for a message "csv") is
// that object's, not the message's, and its reader may hold nothing but
// the right to read the dead letter.
func TestTrailLeavesOutObjectsNamedLikeTheMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	about := func(objectType, objectID, msgID string) audit.Event {
		e := event("deadletter.discard")
		e.Tenant, e.ObjectType, e.ObjectID, e.MessageID = "acme", objectType, objectID, msgID
		return e
	}
	entries := appendAll(t, b,
		about("dead_letter", "17", "m-17"), // 0: dead letter #17, whose message is m-17
		about("audit_log", "csv", ""),      // 1: an export, object id "csv"
		about("dead_letter", "18", "17"),   // 2: dead letter #18, whose message id is "17"
		about("dead_letter", "19", "csv"),  // 3: dead letter #19, whose message id is "csv"
	)
	require.Len(t, entries, 4)

	trail, err := audit.Trail(b.ctx, b.db.Pool, "dead_letter", "18", "17", "acme", 0)
	require.NoError(t, err)
	assert.Equal(t, []int64{entries[2].Seq}, seqsOf(trail), "dead letter #17's discard is not the trail of message 17")

	trail, err = audit.Trail(b.ctx, b.db.Pool, "dead_letter", "19", "csv", "acme", 0)
	require.NoError(t, err)
	assert.Equal(t, []int64{entries[3].Seq}, seqsOf(trail), "the export is not the trail of message csv")

	page, err := audit.List(b.ctx, b.db.Pool, audit.Filter{MessageID: "17", Limit: audit.MaxLimit})
	require.NoError(t, err)
	assert.Equal(t, []int64{entries[2].Seq}, seqsOf(page.Entries), "the log's message id filter finds the message's entries only")
}
