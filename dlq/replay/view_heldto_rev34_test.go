package replay_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev34DraftViewSaysTheClassesItIsHeldTo: a draft's request page
// described its class alone, since a draft's stored classes are empty
// until its submit: a revalidate draft of an email.send item (classed
// same_operation too) read revalidate's settings, not the strictest of
// both that the submit holds it to. The view carries the classes a draft
// is held to as its items are classed now, and a submitted request's as
// its submit stored them.
func TestRev34DraftViewSaysTheClassesItIsHeldTo(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := t.Context()
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "email.send", MsgID: "r34-email-accounts",
		OperationID: "op-r34-email-accounts", Principal: "user:alice", Subject: "app.acme.accounts.notify",
		Payload: []byte(`{"to":"a@example.com"}`)})
	_, drafts := b.draft(t, oncall, id)
	require.Len(t, drafts, 1)
	require.Equal(t, replaypolicy.Revalidate, drafts[0].Class)
	require.Empty(t, drafts[0].Classes, "a draft stores no classes before its submit")

	v, err := b.replays.View(ctx, drafts[0].ID, oncall, replay.ViewOptions{})
	require.NoError(t, err)
	assert.Contains(t, v.HeldTo, replaypolicy.SameOperation, "the draft is held to same_operation too")
}
