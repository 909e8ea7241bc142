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
