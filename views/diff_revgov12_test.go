package views

import (
	"strings"
	"testing"
)

// TestRevGov12DiffShowsLoneSurrogateChange: an edited payload needs an
// approver who saw the diff, and PayloadDiff promises it "never hides a
// change". The JSON-aware diff compares each side decoded and encoded
// again; Go's decoder turns every lone surrogate escape (\ud800, \udbff,
// \udc00...) into U+FFFD, so two different string values read as one. A
// requester who edits a visible field (the note) and, in the same edit,
// another field's lone surrogate (an account id a Java or JavaScript
// consumer reads as two different strings) shows the approver only the
// note: the account line is an unchanged context line.
func TestRevGov12DiffShowsLoneSurrogateChange(t *testing.T) {
	t.Parallel()
	original := []byte(`{"account":"acct-\ud800","note":"refund the order"}`)
	edited := []byte(`{"account":"acct-\udbff","note":"refund the order, again"}`)
	d := NewPayloadDiff(original, edited)
	var changed []string
	for _, l := range d.Lines {
		if l.Op == "+" || l.Op == "-" {
			changed = append(changed, l.Op+l.Text)
		}
	}
	shown := strings.Join(changed, "\n")
	if !strings.Contains(shown, "account") {
		t.Errorf("the edit changed the account (acct-\\ud800 to acct-\\udbff), and the %s diff the approver reads shows only:\n%s", d.Kind, shown)
	}
}
