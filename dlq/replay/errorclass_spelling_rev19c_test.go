package replay_test

import (
	"testing"

	"github.com/quarantine-console/quarantine"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevReplay19OddlySpelledErrorClassReplaysByClass: a producer that
// says its message is a stale version ("never replay an older version over
// a newer one"), a policy refusal (at least revalidate) or an unknown
// effect (reconciliation note and one approver whatever the class), but
// writes the value in another case (Dlq-Error-Class: Stale_Version),
// gets a dead letter the rules judge as unclassified: replayed by its
// class, directly for a rebuildable item type, with nothing of what the
// error class asks. The header's NAME in another case is read all the
// same (dlq: header_name_case); its value is flagged invalid:error_class
// and then judged as the loosest error class there is. DESIGN.md, "Replay
// semantics": stale_version refused, policy at least revalidate,
// unknown_effect one approver whatever the class.
func TestRevReplay19OddlySpelledErrorClassReplaysByClass(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)

	control := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "stale-lower",
		Class: "stale_version", Subject: "app.acme.search.index_update"})
	stale := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "stale-mixed",
		Class: "Stale_Version", Subject: "app.acme.search.index_update"})
	policy := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "policy-mixed",
		Class: "POLICY", Subject: "app.acme.search.index_update"})

	d, err := b.store.Get(t.Context(), stale)
	require.NoError(t, err)
	assert.Contains(t, d.Flags, "spelling:error_class", "ingest read the value in its spelling, and says so")

	_, drafts := b.draft(t, oncall, control, stale, policy)
	items := b.itemsOf(t, drafts)
	require.Equal(t, replaypolicy.CheckErrorNever, items[control].Check, "stale_version, as the contract spells it, is refused")
	assert.Equal(t, replaypolicy.CheckErrorNever, items[stale].Check,
		"Stale_Version is still a stale version: it must not be replayed (verdict %q, skip %q)", items[stale].Verdict, items[stale].SkipReason)

	var policyClass replaypolicy.Class
	for _, r := range drafts {
		if _, ok := b.itemsOf(t, []replay.Request{r})[policy]; ok {
			policyClass = r.Class
		}
	}
	assert.False(t, replaypolicy.Stricter(replaypolicy.Revalidate, policyClass),
		"a POLICY error is at least revalidate, got a %s draft: its original principal's authority is never re-checked", policyClass)

	// unknown_effect: a reconciliation note and one approver whatever the
	// class. Spelled Unknown_Effect, it is submitted without a note and
	// approved on the requester's word alone.
	unknown := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "unknown-mixed",
		Class: "Unknown_Effect", Subject: "app.acme.search.index_update"})
	batch, drafts := b.draft(t, oncall, unknown)
	_, err = b.replays.Submit(t.Context(), batch, oncall, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
	var refused *replay.RefusedError
	require.ErrorAs(t, err, &refused, "no reconciliation note")
	assert.Contains(t, refused.Reasons[drafts[0].ID], `error class "unknown_effect", which needs reconciliation first`)
	req := b.request(t, []int64{unknown}, replay.SubmitInput{Reason: "reindex", ReconciliationNote: "the index has no version 3 of it, checked 10:42"})
	assert.Equal(t, replay.StatusPendingApproval, req.Status,
		"an unknown effect waits for one approver (and its submit for a reconciliation note); it was %s, note %q", req.Status, req.ReconciliationNote)
}

// TestUnreadableErrorClassIsJudgedStrictly: a Dlq-Error-Class that names
// no class in any spelling (ingest stores unclassified and flags it
// invalid:error_class) may have meant stale_version or unknown_effect, so
// the rules judge it as unreadable: at least manual (two approvers) and
// a reconciliation note, whatever its item type's class; never as a dead
// letter that said nothing (by its class). A policy file may tighten it
// to never.
func TestUnreadableErrorClassIsJudgedStrictly(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := t.Context()
	said := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "ec-none",
		Subject: "app.acme.search.index_update", Headers: map[string][]string{"Dlq-Error-Class": {"VersionConflict"}}})
	d, err := b.store.Get(ctx, said)
	require.NoError(t, err)
	require.Equal(t, "unclassified", string(d.ErrorClass), "stored as the contract says: unclassified when invalid")
	require.Contains(t, d.Flags, "invalid:error_class")

	batch, drafts := b.draft(t, oncall, said)
	require.Len(t, drafts, 1)
	assert.Equal(t, replaypolicy.Manual, drafts[0].Class, "a rebuildable item type, but its error class could not be read")
	phrase, err := b.replays.ConfirmationFor(ctx, drafts[0].ID)
	require.NoError(t, err)
	confirm := map[int64]string{drafts[0].ID: phrase}
	_, err = b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex", Confirmations: confirm}, quarantine.RequestMeta{})
	var refused *replay.RefusedError
	require.ErrorAs(t, err, &refused)
	assert.Contains(t, refused.Reasons[drafts[0].ID], `error class "unreadable", which needs reconciliation first`)

	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex", Confirmations: confirm,
		ReconciliationNote: "the index holds version 4 of doc 1; this is version 3, checked 10:42"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	assert.Equal(t, 2, reqs[0].ApprovalsNeeded, "manual: two approvers")

	t.Run("FileTightens", func(t *testing.T) {
		strict, err := replaypolicy.Parse("strict.toml", []byte(`
[[rule]]
item_type = "search.*"
class = "rebuildable"
[error_class.unreadable]
replay = "never"
`))
		require.NoError(t, err)
		assert.Equal(t, replaypolicy.Never, strict.ErrorRule(replaypolicy.ErrUnreadable).Replay)
		_, err = replaypolicy.Parse("loose.toml", []byte("[error_class.unreadable]\nreconciliation_note = false\n"))
		require.Error(t, err, "the note may not be taken away")
	})
}
