package replaypolicy

import (
	"strconv"
	"strings"
)

// The TOML decoder reports a line for syntax errors but keeps the positions of
// keys to itself, so a file that parses yet fails validation would otherwise
// get errors without lines. locator recovers them with a small scan of the
// already-valid source: table headers, array-of-tables headers and key/value
// lines, skipping the insides of strings, arrays and inline tables. It is a
// best effort for error messages only; a key it cannot place gets line 0 and
// the message goes out without a line.

// locator maps a key path to the line (1-based) where it was written. Paths
// are dot-joined; an array of tables gets its 0-based index as a path
// element, so the class of the third [[rule]] is "rule.2.class".
type locator struct {
	lines map[string]int
}

// newLocator scans src. It never fails; on text it does not understand it
// records nothing for that line.
func newLocator(src string) locator {
	l := locator{lines: map[string]int{}}
	var (
		table  []string           // path of the current [table] or [[array]] element
		counts = map[string]int{} // elements seen per array-of-tables path
		v      valueScanner       // open multi-line value, if any
	)
	for i, line := range strings.Split(src, "\n") {
		n := i + 1
		if v.open() {
			v.scan(line, n, l)
			continue
		}
		s := strings.TrimSpace(line)
		switch {
		case s == "" || s[0] == '#':
		case strings.HasPrefix(s, "[["):
			parts, rest, ok := parseKey(s[2:])
			if !ok || !strings.HasPrefix(rest, "]]") {
				continue
			}
			base := strings.Join(parts, ".")
			idx := counts[base]
			counts[base] = idx + 1
			table = append(parts, strconv.Itoa(idx))
			l.record(base, n)
			l.record(strings.Join(table, "."), n)
		case s[0] == '[':
			parts, rest, ok := parseKey(s[1:])
			if !ok || !strings.HasPrefix(rest, "]") {
				continue
			}
			table = parts
			l.record(strings.Join(table, "."), n)
		default:
			parts, rest, ok := parseKey(s)
			if !ok || !strings.HasPrefix(rest, "=") {
				continue
			}
			path := strings.Join(append(append([]string(nil), table...), parts...), ".")
			l.record(path, n)
			v = valueScanner{path: path}
			v.scan(rest[1:], n, l)
		}
	}
	return l
}

// record keeps the first line a path was seen on.
func (l locator) record(path string, line int) {
	if _, ok := l.lines[path]; !ok {
		l.lines[path] = line
	}
}

// line returns the line of path, or of its nearest recorded parent, or 0.
func (l locator) line(path ...string) int {
	for n := len(path); n > 0; n-- {
		if line, ok := l.lines[strings.Join(path[:n], ".")]; ok {
			return line
		}
	}
	return 0
}

// parseKey reads a (possibly dotted, possibly quoted) TOML key from the start
// of s and returns its parts and the text after it, trimmed on the left.
func parseKey(s string) (parts []string, rest string, ok bool) {
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, "", false
		}
		var part string
		switch s[0] {
		case '"':
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, "", false
			}
			part, s = s[1:end], s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, "", false
			}
			part, s = s[1:end+1], s[end+2:]
		default:
			end := 0
			for end < len(s) && isBareKeyByte(s[end]) {
				end++
			}
			if end == 0 {
				return nil, "", false
			}
			part, s = s[:end], s[end:]
		}
		parts = append(parts, part)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return parts, s, true
		}
		s = s[1:]
	}
}

func isBareKeyByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

// valueScanner follows a TOML value across lines: bracket depth of arrays and
// inline tables, and whether a multi-line string is open, so that lines
// inside a value are not mistaken for keys or headers. In an array value
// (rule = [ {...}, {...} ]) it records each inline table as path.N, as a
// [[path]] section would be, and the keys directly in it as path.N.key, so
// that a problem in the third inline rule names its own line.
type valueScanner struct {
	depth int
	delim string // `"""` or `'''` while a multi-line string is open

	path    string // key path of the value
	array   bool   // the value is an array
	elems   int    // inline tables seen directly in the array
	inElem  bool   // inside one of them (depth 2 is its own level)
	wantKey bool   // a key of that inline table comes next
}

func (v *valueScanner) open() bool { return v.depth > 0 || v.delim != "" }

// scan consumes one line (or the rest of one) of a value; line is its
// number, for what it records in l.
func (v *valueScanner) scan(s string, line int, l locator) {
	for i := 0; i < len(s); {
		if v.wantKey && v.delim == "" {
			switch s[i] {
			case ' ', '\t', '\r':
				i++
				continue
			case '#':
				return // the key is on a later line
			}
			v.wantKey = false
			if parts, rest, ok := parseKey(s[i:]); ok && strings.HasPrefix(rest, "=") {
				l.record(v.path+"."+strconv.Itoa(v.elems-1)+"."+strings.Join(parts, "."), line)
				i = len(s) - len(rest) + 1
				continue
			}
		}
		if v.delim != "" {
			end := strings.Index(s[i:], v.delim)
			if end < 0 {
				return
			}
			i += end + len(v.delim)
			// A closing delimiter may be followed by up to two more quotes
			// that belong to the string; they are harmless to skip.
			for i < len(s) && s[i] == v.delim[0] {
				i++
			}
			v.delim = ""
			continue
		}
		switch c := s[i]; c {
		case '#':
			return
		case '[', '{':
			if c == '[' && v.depth == 0 {
				v.array = true
			}
			if c == '{' && v.array && v.depth == 1 {
				l.record(v.path+"."+strconv.Itoa(v.elems), line)
				v.elems++
				v.inElem, v.wantKey = true, true
			}
			v.depth++
			i++
		case ']', '}':
			if v.depth > 0 {
				v.depth--
			}
			if v.depth <= 1 {
				v.inElem = false
			}
			i++
		case ',':
			v.wantKey = v.inElem && v.depth == 2
			i++
		case '"', '\'':
			q := string([]byte{c, c, c})
			if strings.HasPrefix(s[i:], q) {
				v.delim = q
				i += 3
				continue
			}
			i++
			for i < len(s) && s[i] != c {
				if c == '"' && s[i] == '\\' {
					i++
				}
				i++
			}
			i++
		default:
			i++
		}
	}
}
