package dlq

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// StackFramesInFingerprint is how many stack lines (after dropping blank
// and goroutine header lines) take part in a fingerprint.
const StackFramesInFingerprint = 4

var (
	reUUID    = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	reHex     = regexp.MustCompile(`(?i)\b0x[0-9a-f]+\b|\b[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*\b|\b[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*\b`)
	reULID    = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)
	reQuoted  = regexp.MustCompile(`"[^"]*"|'[^']*'`)
	reNumber  = regexp.MustCompile(`\d+`)
	reIDish   = regexp.MustCompile(`\b[A-Za-z]+[-_]?\d[\w-]*\b`)
	reSpaces  = regexp.MustCompile(`\s+`)
	reGoFrame = regexp.MustCompile(`^goroutine \d+`)
)

// Fingerprint groups errors that are the same problem: it hashes the class,
// the normalised message and the top stack frames, so ids, numbers, hex
// values, quoted values and line numbers do not split a group.
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

// NormaliseMessage replaces the variable parts of an error message
// (uuids, hex, quoted values, numbers, id-like words) with placeholders.
func NormaliseMessage(s string) string {
	s = CleanText(s)
	s = reUUID.ReplaceAllString(s, "<uuid>")
	s = reULID.ReplaceAllString(s, "<id>")
	s = reQuoted.ReplaceAllString(s, "<q>")
	s = reHex.ReplaceAllString(s, "<hex>")
	s = reIDish.ReplaceAllString(s, "<id>")
	s = reNumber.ReplaceAllString(s, "<n>")
	s = reSpaces.ReplaceAllString(strings.TrimSpace(s), " ")
	return strings.ToLower(s)
}

func topFrames(stack string, n int) []string {
	var out []string
	for _, line := range strings.Split(CleanText(stack), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || reGoFrame.MatchString(line) {
			continue
		}
		// Go: drop the "+0x1d" offset; all: numbers, hex and ids go.
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
