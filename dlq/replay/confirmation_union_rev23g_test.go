package replay_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevPolicy23UnionTypedConfirmationNeverShown: a policy that asks for a
// typed confirmation on a class that is not the strictest
// ([class.same_operation] typed_confirmation = true: every e-mail replay is
// typed out), and an item classed by it and by a stricter class (an
// email.send dead letter whose target is an accounts subject: subject rule
// revalidate; class revalidate, Union [same_operation]). The rules
// (JudgeRequest, over Table.UnionKnobs: "typed confirmation when any class
// asks for it") ask for the phrase; the phrase the console shows the
// requester (Service.ConfirmationFor, and Selection's Confirmation on the
// confirm page, both confirmationOf -> Table.Confirmation(req.Class)) is
// read from the request's class alone (revalidate: none), so it is "": the
// confirm page offers no field, and every submit is refused with
// `type "REPLAY ..." to confirm`.
func TestRevPolicy23UnionTypedConfirmationNeverShown(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := t.Context()

	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	text := string(src)
	at := strings.Index(text, "[class.same_operation]")
	require.Positive(t, at)
	rest := strings.Replace(text[at:], "typed_confirmation = false", "typed_confirmation = true", 1)
	table, err := replaypolicy.Parse("typed-email.toml", []byte(text[:at]+rest))
	require.NoError(t, err)
	k, _ := table.Knobs(replaypolicy.SameOperation)
	require.True(t, k.TypedConfirmation)
	b.policy.Store(table)

	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "email.send", MsgID: "email-accounts-1",
		OperationID: "op-email-accounts-1", Principal: "user:alice", Subject: "app.acme.accounts.notify",
		Payload: []byte(`{"to":"a@example.com"}`)})
	batch, drafts := b.draft(t, oncall, id)
	require.Len(t, drafts, 1)
	require.Equal(t, replaypolicy.Revalidate, drafts[0].Class, "subject rule *.*.accounts.* is revalidate")

	phrase, err := b.replays.ConfirmationFor(ctx, drafts[0].ID)
	require.NoError(t, err)
	sel, err := b.replays.Selection(ctx, batch, oncall, 10)
	require.NoError(t, err)
	require.Len(t, sel.Requests, 1)
	shown := sel.Requests[0].Confirmation

	_, err = b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "resend the notice",
		Confirmations: map[int64]string{drafts[0].ID: shown}}, quarantine.RequestMeta{})
	var refused *replay.RefusedError
	if errors.As(err, &refused) {
		assert.Failf(t, "the phrase the console shows is not the one the rules ask for",
			"ConfirmationFor %q, confirm page %q; submit with it refused: %s", phrase, shown, refused.Reasons[drafts[0].ID])
		return
	}
	require.NoError(t, err)
	assert.NotEmpty(t, shown, "same_operation asks for a typed confirmation, and the item is same_operation too")
}
