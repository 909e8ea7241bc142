package views

import (
	"strings"
	"testing"
)

// TestFixGov12DiffDecodesOneToOne: the JSON-aware diff is used only when
// decoding each side is one to one (a change of the text is a change of
// the value, and the other way round); whatever Go's decoder would read
// two ways is compared as text, which shows the bytes. Each case changes
// something an approver must see.
func TestFixGov12DiffDecodesOneToOne(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		original, edited string
		kind             string // the diff's kind
		shows            string // a changed line holds it
	}{
		{"LoneLowSurrogate", `{"account":"acct-\udc00","n":1}`, `{"account":"acct-\udfff","n":2}`, "text", "account"},
		{"LoneHighSurrogateToReplacementCharacter", `{"account":"\ud800","n":1}`, `{"account":"\ufffd","n":2}`, "text", "account"},
		{"HighSurrogateBeforeAnotherEscape", `{"account":"\ud800\u0041","n":1}`, `{"account":"\udbff\u0041","n":2}`, "text", "account"},
		{"HighSurrogateAtTheEnd", `["\ud800","a"]`, `["\udbff","b"]`, "text", `\ud`},
		{"TwoHighSurrogates", `{"k":"\ud800\ud800","n":1}`, `{"k":"\udbff\udbff","n":2}`, "text", `"k"`},
		{"LoneSurrogateInAKey", `{"a\ud800":1,"n":1}`, `{"a\udbff":1,"n":2}`, "text", `a\ud`},
		{"DuplicateKeyLaterWinsInGo", `{"amount":1,"amount":2}`, `{"amount":3,"amount":2}`, "text", "amount"},
		{"NumberBeyondFloat64", `{"n":1e400}`, `{"n":1e401}`, "json", "1e401"},
		{"IntegerBeyondFloat64Precision", `{"id":12345678901234567890123}`, `{"id":12345678901234567890124}`, "json", "12345678901234567890124"},
		{"SurrogatePairIsOneCharacter", `{"s":"\ud83d\ude00","n":1}`, `{"n":2,"s":"\ud83d\ude00"}`, "json", `"n"`},
		{"EscapedBackslashIsNoEscape", `{"s":"\\ud800","n":1}`, `{"n":2,"s":"\\ud800"}`, "json", `"n"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := NewPayloadDiff([]byte(tc.original), []byte(tc.edited))
			var changed []string
			for _, l := range d.Lines {
				if l.Op == "+" || l.Op == "-" {
					changed = append(changed, l.Op+l.Text)
				}
			}
			shown := strings.Join(changed, "\n")
			if d.Kind != tc.kind {
				t.Errorf("compared as %s, want %s (note: %q)", d.Kind, tc.kind, d.Note)
			}
			if !strings.Contains(shown, tc.shows) {
				t.Errorf("%s to %s: the %s diff shows only:\n%s", tc.original, tc.edited, d.Kind, shown)
			}
		})
	}
}

// TestFixGov12LoneSurrogateNote: a diff compared as text for a lone
// surrogate says why.
func TestFixGov12LoneSurrogateNote(t *testing.T) {
	t.Parallel()
	d := NewPayloadDiff([]byte(`{"a":"\ud800"}`), []byte(`{"a":"\udbff"}`))
	if !strings.Contains(d.Note, "lone surrogate") {
		t.Errorf("note %q does not say why the JSON was compared as text", d.Note)
	}
}

// FuzzFixGov12LoneSurrogate: whenever loneSurrogate lets a JSON text go,
// re-encoding what Go decoded and decoding that again is the same value
// as the text: nothing was replaced by U+FFFD on the way.
func FuzzFixGov12LoneSurrogate(f *testing.F) {
	for _, s := range []string{`"\ud800"`, `"\ud83d\ude00"`, `["\\ud800"]`, `{"a\udc00":1}`, `"\ud800\u0041"`, `"x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := canonicalJSON([]byte(s))
		if !ok {
			return
		}
		if strings.ContainsRune(c, '\uFFFD') && !strings.Contains(strings.ToLower(s), `\ufffd`) && !strings.ContainsRune(s, '\uFFFD') {
			t.Errorf("%s reads as %s: a U+FFFD that the text does not hold", s, c)
		}
	})
}
