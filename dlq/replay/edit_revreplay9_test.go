package replay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevReplay9SameOperationItemEditedUnderAStricterRequestClass:
// severity low. An email.send item (item type same_operation) whose target
// subject a subject rule makes revalidate is classed revalidate, its union
// holding same_operation; its draft is a revalidate request. DESIGN:
// edited payloads are "never allowed for same_operation", and the item's
// own rules say so (JudgeItem: CheckEdited on c.Has(SameOperation)). But
// the edit itself is judged on the request's class alone
// (replaypolicy.MayEditPayload: class == SameOperation), so the requester's
// edit of the same_operation item is accepted and stored, with its audit
// row: the request turns "edited", and only the next judging (the submit,
// the approve button) says the item can never go edited. A rule written
// in two places: the edit form accepts what every later step refuses.
// Expected: the edit is refused, as for a same_operation request, when
// any class of the item (its union) is same_operation.
func TestRevReplay9SameOperationItemEditedUnderAStricterRequestClass(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	table, err := replaypolicy.Parse("rr9-union.toml", []byte(`
[[rule]]
item_type = "email.send"
class = "same_operation"
[[rule]]
subject = "app.*.accounts.>"
class = "revalidate"
`))
	require.NoError(t, err)
	b.policy.Store(table)
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "email.send", MsgID: "rr9-union-edit", OperationID: "op-rr9-union",
		Subject: "app.acme.accounts.welcome_mail", CorrelationID: "corr-rr9-union", Principal: "user:9", Payload: []byte(`{"to":"a@example.com"}`)})
	_, drafts := b.draft(t, oncall, id)
	require.Len(t, drafts, 1)
	require.Equal(t, replaypolicy.Revalidate, drafts[0].Class, "the stricter of the item type's and the subject's class")
	items, err := b.replays.Items(ctx, drafts[0].ID, 1)
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Empty(t, items[0].SkipReason, "the item goes as received")

	err = b.replays.EditPayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Payload: []byte(`{"to":"b@example.com"}`), Reason: "wrong recipient"},
		quarantine.RequestMeta{})
	assert.Error(t, err, "the payload of an item classed same_operation (its union) was edited: only the same operation with its original payload may be replayed")
	req, err := b.replays.Request(ctx, drafts[0].ID)
	require.NoError(t, err)
	assert.False(t, req.PayloadEdited, "the request holds an edit of a same_operation item")
}

// TestRevReplay9SameOperationEditLeftOutCannotBeUndone: severity low, what
// the edit above leads to. The submit judges the edited same_operation
// item again and leaves it out (CheckEdited), refusing the submit so that
// the requester reviews; the requester then undoes the edit, the one way
// the item could go again. The undo finds no item: an edit is undone only
// of a live item, or of one left out for its error class
// (selectEditable), so the item keeps the edit and stays out, and the
// draft stays "edited".
// Expected: the undo puts the payload received back and the item is
// judged again (it goes as received), or the edit is never accepted.
func TestRevReplay9SameOperationEditLeftOutCannotBeUndone(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	// The edit is refused now (the finding above): it is made under rules
	// that class email.send revalidate, and the union's come in after it.
	before, err := replaypolicy.Parse("rr9-before.toml", []byte(`
[[rule]]
item_type = "email.send"
class = "revalidate"
[[rule]]
subject = "app.*.accounts.>"
class = "revalidate"
`))
	require.NoError(t, err)
	b.policy.Store(before)
	table, err := replaypolicy.Parse("rr9-union.toml", []byte(`
[[rule]]
item_type = "email.send"
class = "same_operation"
[[rule]]
subject = "app.*.accounts.>"
class = "revalidate"
`))
	require.NoError(t, err)
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "email.send", MsgID: "rr9-union-undo", OperationID: "op-rr9-undo",
		Subject: "app.acme.accounts.welcome_mail", CorrelationID: "corr-rr9-undo", Principal: "user:9", Payload: []byte(`{"to":"a@example.com"}`)})
	batch, drafts := b.draft(t, oncall, id)
	require.Len(t, drafts, 1)
	require.NoError(t, b.replays.EditPayload(ctx, drafts[0].ID, id, oncall,
		replay.PayloadEdit{Payload: []byte(`{"to":"b@example.com"}`), Reason: "wrong recipient"}, quarantine.RequestMeta{}),
		"precondition: the edit is accepted (the finding above)")
	b.policy.Store(table)
	_, err = b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "mail lost"}, quarantine.RequestMeta{})
	require.Error(t, err, "the submit judges the edited same_operation item and refuses")
	items, err := b.replays.Items(ctx, drafts[0].ID, 1)
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.NotEmpty(t, items[0].SkipReason, "left out: %s", items[0].Check)

	_, err = b.replays.ChangePayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Undo: true, Reason: "send it as received"}, quarantine.RequestMeta{})
	assert.NoError(t, err, "the edit cannot be undone once the rules left the item out for it")
	items, err = b.replays.Items(ctx, drafts[0].ID, 1)
	require.NoError(t, err)
	assert.False(t, items[0].Edited, "the item keeps an edit nobody can drop")
	assert.Empty(t, items[0].SkipReason, "as received, the item goes (%s)", items[0].Check)
}
