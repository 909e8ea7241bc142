package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// PayloadDiff is what an edit changed in a payload, line by line, as an
// approver reads it. It never hides a change:
//
//   - JSON-aware (each side pretty-printed with sorted keys, so reordering
//     keys or spacing shows as no change) only when both sides are valid
//     UTF-8 JSON without duplicate keys or lone surrogate escapes, and the
//     JSON values differ: decoding must be one to one for it to hide
//     nothing, and a map collapses duplicate keys (which one counts
//     differs between consumers), invalid bytes and lone surrogates
//     ("\ud800", "\udbff" and "\ufffd" all decode to U+FFFD in Go; Java
//     and JavaScript keep them apart); numbers are kept as written, never
//     rounded (1e400, 12345678901234567890123); an edit of spacing or
//     escapes alone would read as "no change";
//   - otherwise text when both are UTF-8, a hex dump when not;
//   - a side longer than maxDiffBytes is not compared at all (TooLarge):
//     the page says so and offers both payloads for download, rather than
//     comparing a part and showing it as the whole (and a request's page
//     then offers no approval);
//   - a diff that takes longer than it may (diffTime, or what a page has
//     left) is coarser, a run of lines shown removed and added whole, but
//     still shows every change.
//
// Long runs of unchanged lines are folded; changed lines never are.
// Payloads come from producers and people: the lines are text, rendered
// escaped.
type PayloadDiff struct {
	Kind    string // "json", "text" or "hex"; "" when TooLarge
	Lines   []DiffLine
	Added   int
	Removed int
	// TooLarge: a side is over maxDiffBytes, so nothing was compared;
	// OriginalSize and EditedSize say how large they are.
	TooLarge bool
	// Elsewhere, when set, is the page that shows this diff, where a page
	// listing many (the approvals list) compared nothing: its sides are
	// larger than it compares, or it compared what it may already.
	Elsewhere                string
	OriginalSize, EditedSize int
	// Note says why the diff is not JSON-aware when both sides are JSON.
	Note string
}

// Compared reports whether d holds the comparison (neither TooLarge nor
// left Elsewhere).
func (d PayloadDiff) Compared() bool { return !d.TooLarge && d.Elsewhere == "" }

// DiffLine is one line of a diff: Op is "+" (only in the edited payload),
// "-" (only in the original), " " (in both) or "…" (unchanged lines
// folded; Text says how many).
type DiffLine struct {
	Op   string
	Text string
}

// Bounds of a diff: the bytes of each side compared (as large as a
// payload edited in the browser, replay.MaxEditablePayload, so that every
// edit made there is shown), the time one takes before it settles for a
// coarser diff, and the unchanged lines kept around each change.
const (
	maxDiffBytes = 256 << 10
	diffTime     = 250 * time.Millisecond
	diffContext  = 3
)

// MaxDiffBytes is the largest payload a diff compares.
const MaxDiffBytes = maxDiffBytes

// NewPayloadDiff compares original and edited.
func NewPayloadDiff(original, edited []byte) PayloadDiff {
	return NewPayloadDiffOfStarts(original, edited, len(original), len(edited))
}

// NewPayloadDiffOfStarts compares two payloads of which only the starts
// were read (original and edited, of originalSize and editedSize bytes):
// reading MaxDiffBytes+1 bytes of each is enough. A side whose size is
// over MaxDiffBytes, or that was not read whole, is TooLarge: a part is
// never compared as if it were the whole.
func NewPayloadDiffOfStarts(original, edited []byte, originalSize, editedSize int) PayloadDiff {
	return NewPayloadDiffWithin(original, edited, originalSize, editedSize, diffTime)
}

// NewPayloadDiffWithin is NewPayloadDiffOfStarts taking at most within
// (and at most diffTime) to compare: past it, the rest is compared
// coarsely (diffmatchpatch's timeout), every change still shown.
func NewPayloadDiffWithin(original, edited []byte, originalSize, editedSize int, within time.Duration) PayloadDiff {
	d := PayloadDiff{OriginalSize: originalSize, EditedSize: editedSize}
	if originalSize > maxDiffBytes || editedSize > maxDiffBytes || len(original) < originalSize || len(edited) < editedSize {
		d.TooLarge = true
		return d
	}
	var a, b string
	ja, oka := canonicalJSON(original)
	jb, okb := canonicalJSON(edited)
	switch {
	case oka && okb && (ja != jb || bytes.Equal(original, edited)):
		d.Kind, a, b = "json", ja, jb
	case utf8.Valid(original) && utf8.Valid(edited):
		d.Kind, a, b = "text", string(original), string(edited)
		if oka && okb {
			d.Note = "The JSON values are equal: the edit changes only spacing, key order or escapes, shown as text."
		} else if jsonLike(original) && jsonLike(edited) {
			d.Note = "Compared as text: a side is not one JSON value, has a key twice, or holds a lone surrogate escape (such as \\ud800) that JSON readers decode differently."
		}
	default:
		d.Kind, a, b = "hex", hexDump(original), hexDump(edited)
	}
	dmp := diffmatchpatch.New()
	// At least a millisecond: 0 is no limit at all to diffmatchpatch.
	dmp.DiffTimeout = max(min(within, diffTime), time.Millisecond)
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

// jsonLike reports whether b starts, after spaces, like a JSON object or
// array.
func jsonLike(b []byte) bool {
	t := bytes.TrimSpace(b)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
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

// canonicalJSON is b pretty-printed with sorted keys and exact numbers
// (json.Number: the digits as written), when b is one JSON value that
// decodes one to one: valid UTF-8, no object holding a key twice
// (decoding into a map would keep only one of them), no lone surrogate
// escape (loneSurrogate).
func canonicalJSON(b []byte) (string, bool) {
	if !utf8.Valid(b) || !json.Valid(b) || duplicateKeys(b) || loneSurrogate(b) {
		return "", false
	}
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

// duplicateKeys reports whether an object of the JSON value b names a key
// twice (b is valid JSON).
func duplicateKeys(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false // the end (b is valid)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, isKey := tok.(string); isKey && top != nil && top.object && top.key {
			if top.keys[k] {
				return true
			}
			top.keys[k], top.key = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object, a key comes next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

// loneSurrogate reports whether a string of the JSON text b (valid JSON)
// holds a \u escape of half a UTF-16 surrogate pair without its other
// half next to it. Go decodes each such escape to U+FFFD, as it decodes
// "\ufffd" itself, so two different strings would read as one; Java and
// JavaScript keep them apart. A surrogate pair written as two escapes is
// one character and decodes exactly.
func loneSurrogate(b []byte) bool {
	inString, high := false, false // high: the last thing read in the string is a high surrogate escape
	for i := 0; i < len(b); i++ {
		if !inString {
			inString = b[i] == '"'
			continue
		}
		r := rune(-1) // not a \u escape
		switch b[i] {
		case '"':
			inString = false
		case '\\':
			i++
			if b[i] == 'u' && i+4 < len(b) {
				n, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 32)
				if err != nil {
					return true // not valid JSON after all: compare as text
				}
				r, i = rune(n), i+4
			}
		}
		switch {
		case 0xD800 <= r && r < 0xDC00: // high: a low one must follow
			if high {
				return true
			}
			high = true
		case 0xDC00 <= r && r < 0xE000: // low: only right after a high one
			if !high {
				return true
			}
			high = false
		case high:
			return true
		}
	}
	return false
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
