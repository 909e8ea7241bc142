package replaypolicy

// Review (rev-fixes): neighbouring paths of this session's fixes.

import (
	"strings"
	"testing"
)

// TestCatchAllThatTightensNothingStillWarns: UnlistedSubjects (72f57be,
// de15b0b) is silent once some subject rule is subject = ">", whatever
// its class. A subject rule only tightens, so a catch-all of the easiest
// class (rebuildable) tightens nothing: a target subject no other rule
// names still takes its item type's class, which the producer chooses,
// exactly the hole the warning is there to report; yet neither the
// console's log nor the policy page says so.
func TestCatchAllThatTightensNothingStillWarns(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, "[[rule]]\nsubject = \">\"\nclass = \"rebuildable\"\n"+testPolicy)
	if got := tbl.ClassOf("search.index_update", "app.acme.payments.capture").Class; got != Rebuildable {
		t.Fatalf("precondition: the item type's class is kept (got %s)", got)
	}
	if why := tbl.UnlistedSubjects(); why == "" {
		t.Errorf("a catch-all of class rebuildable classifies nothing, and UnlistedSubjects says nothing: search.index_update aimed at app.acme.payments.capture is rebuildable")
	}
}

// TestConfirmationPhraseReadsAsTyped: phraseID (23c9066) quotes an id that
// "would not read as itself" only for a space at either end, a character
// that does not print or a leading quote. A run of spaces inside the id
// ("ref  42", kept exactly by ingest) is left bare, and the page shows the
// phrase in a <label> ("Type REPLAY ref  42 to approve") and the refusal
// in an error paragraph, where HTML collapses white space: the approver
// reads and types "REPLAY ref 42", which Confirmed refuses, so such a
// manual item cannot be approved, the failure 23c9066 set out to remove.
func TestConfirmationPhraseReadsAsTyped(t *testing.T) {
	t.Parallel()
	phrase := ConfirmationPhrase(Item{MsgID: "ref  42"}, Request{Class: Manual, Items: 1})
	rendered := strings.Join(strings.Fields(phrase), " ") // as a browser shows the label's text
	if v := Confirmed(phrase, rendered); v.Outcome != Go {
		t.Errorf("the phrase %q reads as %q on the page, and typing what is read is refused: %s", phrase, rendered, v.Reason)
	}
}
