package dlq_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
)

// TestRefusedMissingIDsAreNotTheirObject: ids no dead letter has are
// refused in a row outside any tenant, which names them as the refused
// selection (object dead_letters, the ids in its object id and after), not
// as object dead_letter:<id>: ids are a sequence, and the id someone of
// acme named before it existed may go to globex's next dead letter, whose
// page must not carry acme's attempt. Refused ids of a dead letter that
// exists stay that dead letter's, in its tenant.
func TestRefusedMissingIDsAreNotTheirObject(t *testing.T) {
	t.Parallel()
	refused := dlq.RefusedIDs{}
	refused.AddMissing(41)
	refused.Add(7, "acme", "not open (discarded)")
	events := refused.Events(audit.NewEvent(quarantine.Actor{Subject: "sub-ann"}, quarantine.RequestMeta{}, audit.ActionReplayDraft))
	require.Len(t, events, 2, "a row per tenant, outside any first")

	missing := events[0]
	assert.Equal(t, "", missing.Tenant)
	assert.Equal(t, audit.OutcomeDenied, missing.Outcome)
	assert.NotEqual(t, "dead_letter", missing.ObjectType, "an id of no dead letter is not recorded as that dead letter")
	assert.Equal(t, "dead_letters", missing.ObjectType)
	assert.Equal(t, "41", missing.ObjectID, "the refused ids are still named")
	assert.Equal(t, map[string]any{"refused": map[string]any{"no such dead letter": []int64{41}}, "count": 1}, missing.After)
	assert.Equal(t, "1 selected dead letters refused: no such dead letter (1)", missing.Reason)

	mine := events[1]
	assert.Equal(t, "acme", mine.Tenant)
	assert.Equal(t, "dead_letter", mine.ObjectType, "a dead letter that exists is the row's object, in its tenant")
	assert.Equal(t, "7", mine.ObjectID)
}
