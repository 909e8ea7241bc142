package replay_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevReplay19UnreadableErrorClassLooserThanTightenedUnclassified: an
// operator whose policy file, written before the error class unreadable
// existed, tightened [error_class.unclassified] to never ("we replay nothing
// a producer did not say why it failed") had every dead letter whose
// Dlq-Error-Class could not be read refused: ingest stores it as
// unclassified, and the docs said unclassified is "header absent or not one
// of the above". Since 6196fa4 such a dead letter is judged as unreadable,
// whose built-in rule (manual and a note) does not look at what the file
// says of unclassified: the same file, unchanged, now lets it be replayed.
// The new class was meant to be stricter than a dead letter that said
// nothing ("never judged as a dead letter that said nothing"), and a policy
// file's rules only tighten (docs/replay.md, "Error classes"); here an
// upgrade loosens the operator's own rule.
func TestRevReplay19UnreadableErrorClassLooserThanTightenedUnclassified(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	text := strings.Replace(string(src), "[error_class.unclassified]\nreplay = \"by_class\"", "[error_class.unclassified]\nreplay = \"never\"", 1)
	require.NotEqual(t, string(src), text, "the file's unclassified section is tightened")
	table, err := replaypolicy.Parse("policy.toml", []byte(text))
	require.NoError(t, err)
	b.policy.Store(table)

	absent := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "ec-absent",
		Subject: "app.acme.search.index_update", Headers: map[string][]string{"Dlq-Error-Class": {""}}})
	garbled := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "ec-garbled",
		Subject: "app.acme.search.index_update", Headers: map[string][]string{"Dlq-Error-Class": {"VersionConflict"}}})
	control := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "ec-transient",
		Class: "transient", Subject: "app.acme.search.index_update"})
	a, err := b.store.Get(t.Context(), absent)
	require.NoError(t, err)
	require.Equal(t, "unclassified", string(a.ErrorClass), "said nothing")
	d, err := b.store.Get(t.Context(), garbled)
	require.NoError(t, err)
	require.Contains(t, d.Flags, "invalid:error_class", "a value that names no class")

	_, drafts := b.draft(t, oncall, absent, garbled, control)
	items := b.itemsOf(t, drafts)
	require.Equal(t, replaypolicy.CheckErrorNever, items[absent].Check, "the file refuses a dead letter that said nothing")
	assert.Equal(t, replaypolicy.CheckErrorNever, items[garbled].Check,
		"a dead letter whose error class could not be read is judged at least as strictly as one that said nothing; got verdict %q, check %q, skip %q",
		items[garbled].Verdict, items[garbled].Check, items[garbled].SkipReason)
}
