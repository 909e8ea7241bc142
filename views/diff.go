package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// PayloadDiff is what an edit changed in a payload, line by line, as an
// approver reads it: JSON-aware when both sides parse as JSON (each
// pretty-printed with sorted keys, so reordering keys or spacing shows as
// no change), text when both are UTF-8, a hex dump otherwise. Long runs of
// unchanged lines are folded. Payloads come from producers and people:
// the lines are text, rendered escaped.
type PayloadDiff struct {
	Kind      string // "json", "text" or "hex"
	Lines     []DiffLine
	Added     int
	Removed   int
	Truncated bool // a side was longer than maxDiffBytes: only its start is compared
}

// DiffLine is one line of a diff: Op is "+" (only in the edited payload),
// "-" (only in the original), " " (in both) or "…" (unchanged lines
// folded; Text says how many).
type DiffLine struct {
	Op   string
	Text string
}

// Bounds of a diff: the bytes of each side compared, and the unchanged
// lines kept around each change.
const (
	maxDiffBytes = 64 << 10
	diffContext  = 3
)

// NewPayloadDiff compares original and edited.
func NewPayloadDiff(original, edited []byte) PayloadDiff {
	var d PayloadDiff
	if len(original) > maxDiffBytes || len(edited) > maxDiffBytes {
		original, edited = original[:min(len(original), maxDiffBytes)], edited[:min(len(edited), maxDiffBytes)]
		d.Truncated = true
	}
	var a, b string
	ja, oka := canonicalJSON(original)
	jb, okb := canonicalJSON(edited)
	switch {
	case oka && okb:
		d.Kind, a, b = "json", ja, jb
	case utf8.Valid(original) && utf8.Valid(edited):
		d.Kind, a, b = "text", string(original), string(edited)
	default:
		d.Kind, a, b = "hex", hexDump(original), hexDump(edited)
	}
	dmp := diffmatchpatch.New()
	ra, rb, lines := dmp.DiffLinesToRunes(a, b)
	var all []DiffLine
	for _, part := range dmp.DiffCharsToLines(dmp.DiffMainRunes(ra, rb, false), lines) {
		op := " "
		switch part.Type {
		case diffmatchpatch.DiffInsert:
			op = "+"
		case diffmatchpatch.DiffDelete:
			op = "-"
		}
		for _, l := range strings.SplitAfter(part.Text, "\n") {
			if l == "" {
				continue
			}
			all = append(all, DiffLine{Op: op, Text: strings.TrimSuffix(l, "\n")})
			switch op {
			case "+":
				d.Added++
			case "-":
				d.Removed++
			}
		}
	}
	d.Lines = fold(all)
	return d
}

// fold keeps diffContext unchanged lines around each change and replaces
// the rest of each unchanged run by one "…" line.
func fold(lines []DiffLine) []DiffLine {
	keep := make([]bool, len(lines))
	for i, l := range lines {
		if l.Op == " " {
			continue
		}
		for j := max(0, i-diffContext); j <= min(len(lines)-1, i+diffContext); j++ {
			keep[j] = true
		}
	}
	var out []DiffLine
	for i := 0; i < len(lines); {
		if keep[i] {
			out = append(out, lines[i])
			i++
			continue
		}
		j := i
		for j < len(lines) && !keep[j] {
			j++
		}
		out = append(out, DiffLine{Op: "…", Text: fmt.Sprintf("%d unchanged lines", j-i)})
		i = j
	}
	return out
}

// canonicalJSON is b pretty-printed with sorted keys and exact numbers,
// when b is one JSON value.
func canonicalJSON(b []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return "", false
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", false
	}
	return out.String(), true
}

// hexDump is b as lines of 16 bytes: offset, hex, and the printable ASCII.
func hexDump(b []byte) string {
	var s strings.Builder
	for off := 0; off < len(b); off += 16 {
		row := b[off:min(off+16, len(b))]
		fmt.Fprintf(&s, "%08x  % x", off, row)
		s.WriteString(strings.Repeat("   ", 16-len(row)))
		s.WriteString("  ")
		for _, c := range row {
			if c < 0x20 || c > 0x7e {
				c = '.'
			}
			s.WriteByte(c)
		}
		s.WriteByte('\n')
	}
	return s.String()
}
