package replay_test

import (
	"testing"

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
	assert.Contains(t, d.Flags, "invalid:error_class", "ingest saw the value and could not read it")

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
	req := b.request(t, []int64{unknown}, replay.SubmitInput{Reason: "reindex"})
	assert.Equal(t, replay.StatusPendingApproval, req.Status,
		"an unknown effect waits for one approver (and its submit for a reconciliation note); it was %s, note %q", req.Status, req.ReconciliationNote)
}
