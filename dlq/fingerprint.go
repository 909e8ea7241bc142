package dlq

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// StackFramesInFingerprint is how many stack lines (after dropping blank
// and goroutine header lines) take part in a fingerprint: lines, not
// frames. A Java or .NET trace writes a frame a line, so four frames take
// part; a Go or Python trace writes two lines a frame (the function, then
// its file and line), so the top two do. It stays so: a group's triage
// (assignee, note, snooze, fixes) is kept under its fingerprint, and
// counting otherwise would split every stored group from its new arrivals.
const StackFramesInFingerprint = 4

// Fingerprint groups errors that are the same problem: it hashes the class,
// the normalised message and the top stack lines (StackFramesInFingerprint),
// so ids, numbers, hex values, quoted values and line numbers do not split a
// group.
func Fingerprint(class ErrorClass, message, stack string) string {
	h := sha256.New()
	h.Write([]byte(class))
	h.Write([]byte{0})
	h.Write([]byte(NormaliseMessage(message)))
	h.Write([]byte{0})
	for _, f := range topFrames(stack, StackFramesInFingerprint) {
		h.Write([]byte(f))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// NormaliseMessage replaces the variable parts of an error message with
// placeholders, in one pass: a quoted value becomes <q>, and a word that
// holds a digit (numbers, uuids, hex, ids such as order-7781 or 0xc000123)
// becomes <#>. Letters are lower-cased and white space collapsed. A quote
// opens a value only where a word does not run into it: the apostrophe of
// "can't" is kept as it is, else it would take every word up to the next
// apostrophe ("can't reach the gateway, won't retry") into one <q>, and
// different errors into one group.
func NormaliseMessage(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case (c == '"' || c == '\'') && (i == 0 || !inWord(s[i-1])):
			if end := strings.IndexByte(s[i+1:], c); end >= 0 {
				flushSpace(&b, &space)
				b.WriteString("<q>")
				i += end + 2
				continue
			}
			flushSpace(&b, &space)
			b.WriteByte(c)
			i++
		case isWordByte(c):
			j, digit := i, false
			for j < len(s) && isWordByte(s[j]) {
				digit = digit || (s[j] >= '0' && s[j] <= '9')
				j++
			}
			flushSpace(&b, &space)
			if digit {
				b.WriteString("<#>")
			} else {
				for k := i; k < j; k++ {
					b.WriteByte(lower(s[k]))
				}
			}
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			space = b.Len() > 0
			i++
		default:
			flushSpace(&b, &space)
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func flushSpace(b *strings.Builder, space *bool) {
	if *space {
		b.WriteByte(' ')
		*space = false
	}
}

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-'
}

// inWord says whether c, the byte before a quote, is part of a word the
// quote continues: a word byte, or a byte of a character beyond ASCII
// (the "é'" of a French elision).
func inWord(c byte) bool {
	return isWordByte(c) || c >= 0x80
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func topFrames(stack string, n int) []string {
	var out []string
	for line := range strings.SplitSeq(stack, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "goroutine ") {
			continue
		}
		// Go: drop the "+0x1d" offset; numbers, hex and ids go in normalising.
		if i := strings.LastIndex(line, " +0x"); i > 0 {
			line = line[:i]
		}
		out = append(out, NormaliseMessage(line))
		if len(out) == n {
			break
		}
	}
	return out
}
