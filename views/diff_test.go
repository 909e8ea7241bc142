package views

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestPayloadDiff(t *testing.T) {
	t.Parallel()
	render := func(d PayloadDiff) string {
		var b strings.Builder
		for _, l := range d.Lines {
			b.WriteString(l.Op + l.Text + "\n")
		}
		return b.String()
	}
	t.Run("JSONIgnoresKeyOrderAndSpacing", func(t *testing.T) {
		d := NewPayloadDiff([]byte(`{"b":1,"a":{"x":[1,2]},"amount":10.50}`), []byte(`{ "a": {"x": [1, 2]}, "amount": 10.50, "b": 2 }`))
		if d.Kind != "json" || d.Added != 1 || d.Removed != 1 {
			t.Fatalf("diff %+v:\n%s", d, render(d))
		}
		if got := render(d); !strings.Contains(got, `-  "b": 1`) || !strings.Contains(got, `+  "b": 2`) || !strings.Contains(got, `"amount": 10.50`) {
			t.Errorf("the changed key, and numbers kept exact:\n%s", got)
		}
	})
	t.Run("TextFoldsUnchangedRuns", func(t *testing.T) {
		var a, b []string
		for i := range 40 {
			a = append(a, "line "+string(rune('A'+i%26)))
		}
		b = append(b, a...)
		b[20] = "changed"
		d := NewPayloadDiff([]byte(strings.Join(a, "\n")), []byte(strings.Join(b, "\n")))
		if d.Kind != "text" || d.Added != 1 || d.Removed != 1 {
			t.Fatalf("diff %+v", d)
		}
		got := render(d)
		if !strings.Contains(got, "…17 unchanged lines") || !strings.Contains(got, "+changed") || len(d.Lines) > 2*diffContext+4 {
			t.Errorf("folded:\n%s", got)
		}
	})
	t.Run("BinaryAsHex", func(t *testing.T) {
		d := NewPayloadDiff([]byte{0xff, 0x00, 'a'}, []byte{0xfe, 0x00, 'a'})
		if d.Kind != "hex" || !strings.Contains(render(d), "-00000000  ff 00 61") || !strings.Contains(render(d), "+00000000  fe 00 61") {
			t.Errorf("hex diff:\n%s", render(d))
		}
	})
	t.Run("TooLargeIsNotComparedInPart", func(t *testing.T) {
		big := []byte(strings.Repeat("x\n", maxDiffBytes))
		d := NewPayloadDiff(big, append(big, []byte("changed at the end\n")...))
		if !d.TooLarge || len(d.Lines) != 0 || d.OriginalSize != len(big) || d.EditedSize != len(big)+19 {
			t.Errorf("a side over the bound is not compared (no part shown as the whole): %+v", d.Kind)
		}
	})
	t.Run("EveryBrowserEditIsCompared", func(t *testing.T) {
		// As large as a payload edited in the browser: compared.
		var sb strings.Builder
		for i := 0; sb.Len() < 250<<10; i++ {
			fmt.Fprintf(&sb, "line %d\n", i)
		}
		original := sb.String()
		edited := strings.Replace(original, "line 20000\n", "line 20000 edited\n", 1)
		d := NewPayloadDiff([]byte(original), []byte(edited))
		if d.TooLarge || d.Added != 1 || d.Removed != 1 {
			t.Errorf("a 250 KiB edit: %+v", PayloadDiff{Kind: d.Kind, Added: d.Added, Removed: d.Removed, TooLarge: d.TooLarge})
		}
	})
	t.Run("OutOfTimeStillShowsEveryChange", func(t *testing.T) {
		// Lines that all differ in order (shuffled), compared with no time
		// to spare: coarser, never missing a change.
		var a, b []string
		for i := range 3000 {
			a = append(a, fmt.Sprintf("row %d", i))
			b = append(b, fmt.Sprintf("row %d", (i*7919)%3000))
		}
		b[1500] = "row edited"
		d := NewPayloadDiffWithin([]byte(strings.Join(a, "\n")), []byte(strings.Join(b, "\n")), len(strings.Join(a, "\n")), len(strings.Join(b, "\n")), time.Nanosecond)
		got := render(d)
		if !strings.Contains(got, "+row edited") || !strings.Contains(got, "-row "+fmt.Sprint((1500*7919)%3000)) {
			t.Errorf("the edit is shown: %d added, %d removed", d.Added, d.Removed)
		}
		if d.Added < 1 || d.Removed < 1 || d.Added > 3000 || d.Removed > 3000 {
			t.Errorf("counts %d added, %d removed", d.Added, d.Removed)
		}
	})
	t.Run("DuplicateKeysCompareAsText", func(t *testing.T) {
		// As a map both sides are {"amount":1}: the edit of the first key
		// would vanish.
		d := NewPayloadDiff([]byte(`{"amount":5,"amount":1}`), []byte(`{"amount":500,"amount":1}`))
		if d.Kind != "text" || d.Added != 1 || d.Removed != 1 || d.Note == "" {
			t.Fatalf("diff %+v:\n%s", d, render(d))
		}
		if got := render(d); !strings.Contains(got, `+{"amount":500,"amount":1}`) {
			t.Errorf("the edited duplicate shows:\n%s", got)
		}
		nested := NewPayloadDiff([]byte(`{"a":{"k":1,"k":2},"b":[{"k":1},{"k":2}]}`), []byte(`{"a":{"k":3,"k":2},"b":[{"k":1},{"k":2}]}`))
		if nested.Kind != "text" || nested.Added == 0 {
			t.Errorf("a nested duplicate key: %+v", nested)
		}
		if ok := NewPayloadDiff([]byte(`{"a":{"k":1},"b":{"k":1},"c":[{"k":1},{"k":2}]}`), []byte(`{"a":{"k":2},"b":{"k":1},"c":[{"k":1},{"k":2}]}`)); ok.Kind != "json" {
			t.Errorf("the same key in sibling objects is no duplicate: %+v", ok.Kind)
		}
	})
	t.Run("InvalidUTF8ComparesBytes", func(t *testing.T) {
		// Decoding would replace both invalid bytes by U+FFFD: equal values.
		d := NewPayloadDiff([]byte("{\"n\":\"a\xff\"}"), []byte("{\"n\":\"a\xfe\"}"))
		if d.Kind != "hex" || d.Added == 0 || d.Removed == 0 {
			t.Errorf("diff %+v:\n%s", d, render(d))
		}
	})
	t.Run("FormattingOnlyEditShows", func(t *testing.T) {
		d := NewPayloadDiff([]byte(`{"n":"\u00e9"}`), []byte(`{"n":"é"}`))
		if d.Kind != "text" || d.Added != 1 || d.Removed != 1 || !strings.Contains(d.Note, "equal") {
			t.Errorf("bytes changed, values equal: the change still shows: %+v", d)
		}
	})
	t.Run("EveryChangeShows", func(t *testing.T) {
		var a, b []string
		for i := range 400 {
			a = append(a, fmt.Sprintf(`"k%03d": %d`, i, i))
		}
		b = append(b, a...)
		for i := 0; i < 400; i += 37 {
			b[i] = fmt.Sprintf(`"k%03d": "edited"`, i)
		}
		d := NewPayloadDiff([]byte("{"+strings.Join(a, ",")+"}"), []byte("{"+strings.Join(b, ",")+"}"))
		got := render(d)
		for i := 0; i < 400; i += 37 {
			if !strings.Contains(got, fmt.Sprintf(`+  "k%03d": "edited"`, i)) {
				t.Errorf("edit of k%03d missing", i)
			}
		}
		if d.Added != 11 || d.Removed != 11 {
			t.Errorf("counts %d/%d", d.Added, d.Removed)
		}
	})
}
