package dlq

import (
	"bytes"
	"fmt"
	"strings"
)

// The NATS header block: a version line, then "Name: value" lines, each
// ended by CRLF, then an empty line.
const (
	headerVersion = "NATS/1.0"
	// maxHeaderProblems is how many problems of one block are named; the
	// rest are counted. Random bytes would otherwise make thousands.
	maxHeaderProblems = 10
)

// ParseHeaderBlock reads a NATS header block as the NATS client does, but
// leniently: a line without a colon or with an empty name is skipped and
// named in problems, a missing version line or end of block is named, and
// everything else is kept. Values lose the blanks before them (as with the
// client); names keep their case. An inline status on the version line
// ("NATS/1.0 503 No Responders") becomes Status and Description headers, as
// the client makes them. It never fails.
func ParseHeaderBlock(block []byte) (h map[string][]string, problems []string) {
	h = map[string][]string{}
	skipped := 0
	note := func(format string, args ...any) {
		if len(problems) < maxHeaderProblems {
			problems = append(problems, fmt.Sprintf(format, args...))
		} else {
			skipped++
		}
	}
	line, rest := nextLine(block)
	n := 1 // lines read
	if s := string(line); strings.HasPrefix(s, headerVersion) {
		if status := strings.TrimSpace(s[len(headerVersion):]); status != "" {
			code, desc, _ := strings.Cut(status, " ")
			h["Status"] = []string{code}
			if desc = strings.TrimSpace(desc); desc != "" {
				h["Description"] = []string{desc}
			}
		}
	} else {
		note("the block does not start with %q (it starts %s): read as header lines", headerVersion, short(s))
		rest, n = block, 0
	}
	closed := false
	for len(rest) > 0 {
		line, rest = nextLine(rest)
		n++
		if len(line) == 0 {
			closed = true
			if len(bytes.Trim(rest, "\r\n")) > 0 {
				note("%d bytes follow the empty line that ends the block: kept in the raw block only", len(rest))
			}
			break
		}
		name, value, ok := bytes.Cut(line, []byte{':'})
		switch {
		case !ok:
			note("line %d has no colon: %s skipped", n, short(string(line)))
		case len(name) == 0:
			note("line %d has an empty name: %s skipped", n, short(string(line)))
		default:
			k := string(name)
			h[k] = append(h[k], string(bytes.TrimLeft(value, " \t")))
		}
	}
	if !closed {
		note("the block is not ended by an empty line")
	}
	if skipped > 0 {
		problems = append(problems, fmt.Sprintf("and %d more problems in the block", skipped))
	}
	return h, problems
}

// nextLine returns the first line of b without its LF (or CRLF) and the
// bytes after it.
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil
	}
	line = b[:i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, b[i+1:]
}

// EncodeHeaderBlock writes headers as a NATS header block, in their order.
// It is how the raw form keeps headers that the NATS client read (whose
// exact block it never saw); values are written as received, so a value
// holding a line break makes a block that reads back differently.
func EncodeHeaderBlock(hs []HeaderValue) []byte {
	var b bytes.Buffer
	b.WriteString(headerVersion + "\r\n")
	for _, h := range hs {
		name, err1 := decodeText(h.Name, h.NameEncoding)
		value, err2 := decodeText(h.Value, h.Encoding)
		if err1 != nil || err2 != nil { // stored by us, always decodable; keep the text if not
			name, value = h.Name, h.Value
		}
		b.WriteString(name)
		b.WriteString(": ")
		b.WriteString(value)
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}
