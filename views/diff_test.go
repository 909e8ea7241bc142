package views

import (
	"strings"
	"testing"
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
	t.Run("Bounded", func(t *testing.T) {
		big := []byte(strings.Repeat("x\n", maxDiffBytes))
		if d := NewPayloadDiff(big, append([]byte("y\n"), big...)); !d.Truncated || d.Kind != "text" {
			t.Errorf("a side over the bound is compared by its start: %+v", d.Kind)
		}
	})
}
