package dlq

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// StackFramesInFingerprint is how many stack lines (after dropping blank
// and goroutine header lines) take part in a fingerprint: lines, not
// frames. A Java or .NET trace writes a frame a line, so four frames take
// part; a Go trace writes two lines a frame (the function, then its file
// and line), so the top two do. A Python traceback is read otherwise
// (pythonFrames): its innermost four "File" lines, one a frame, take part
// (of the last traceback, then of the one it was raised from).
// It stays so: a group's triage (assignee, note, snooze, fixes) is kept
// under its fingerprint, and counting otherwise would split every stored
// group from its new arrivals.
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
// becomes <#>. Letters are lower-cased and white space collapsed.
//
// An apostrophe is not a quote (quoteOpens): one between letters ("can't",
// "it's") is kept as it is, and a quote whose next like it runs into a
// word ("won't") opens nothing. Else "can't reach the gateway, won't
// retry" would be "can<q>t retry", and different errors one group.
// Values quoted after a word or a character beyond ASCII (b'abc',
// name"x", 用户'alice'不存在) are values still.
//
// A quoted key of an object ("code": or 'code':, JSON or a Python dict:
// after the object's { or a comma, a field name, followed by a colon)
// is a word of the message, and so is the quoted value of a key that
// says what went wrong (messageKeys: error, code, message, detail,
// reason…): an error whose text is a response body says it only there.
// They are normalised as the rest of the message is (<#> for a word with
// a digit) and kept in their quotes. As <q>, {"error":"payment declined"}
// and {"error":"tenant suspended"} were one group, and so was every such
// body of one endpoint, sharing triage and snoozes (review round 42). The
// value of any other key ({"user":"alice"}, {"email": …}), a key that
// is no field name ({"alice@example.com": …}) and a value quoted
// elsewhere (user "alice" not found, Go's load user "alice": not found,
// KeyError: 'amount', ["a","b"]) are <q> still: one problem is not a
// group per user, file or host.
func NormaliseMessage(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	value := false // the next quote opens the value of a key just read
	depth := 0     // objects ({) open at i, as far as braces outside quotes say
	var last byte  // the last byte before i that is not blank
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			space = b.Len() > 0
			i++
			continue
		}
		afterKey, before := value, last
		value, last = false, c
		switch {
		case c == '"' || c == '\'':
			if end := quoteOpens(s, i); end > 0 {
				flushSpace(&b, &space)
				colon := 0
				if depth > 0 && (before == '{' || before == ',') && fieldName(s[i+1:end]) {
					colon = keyColon(s, end+1)
				}
				if afterKey || colon > 0 { // a key, or a message key's value
					b.WriteByte(c)
					b.WriteString(NormaliseMessage(s[i+1 : end]))
					b.WriteByte(c)
				} else {
					b.WriteString("<q>")
				}
				if colon > 0 {
					b.WriteByte(':')
					i, value = colon+1, messageKeys[lowerASCII(s[i+1:end])]
					continue
				}
				i = end + 1
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
		default:
			switch {
			case c == '{':
				depth++
			case c == '}' && depth > 0:
				depth--
			}
			flushSpace(&b, &space)
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// messageKeys are the keys of a response body whose quoted value says
// what went wrong (NormaliseMessage keeps it): as APIs and frameworks name
// them (RFC 7807's title and detail, OAuth's error and
// error_description, Stripe's code and message, gRPC-JSON's status).
var messageKeys = map[string]bool{
	"error": true, "errors": true, "err": true, "error_code": true, "errorcode": true, "error_type": true, "errortype": true,
	"error_message": true, "errormessage": true, "error_description": true, "code": true, "message": true, "msg": true,
	"detail": true, "details": true, "reason": true, "title": true, "description": true, "type": true, "kind": true, "status": true,
}

// fieldName reports whether s, quoted before a colon, names a field of
// an object: a name of letters, digits, underscores and hyphens, not an
// address, path or host that a map may be keyed by.
func fieldName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

// keyColon is where the colon that makes the quoted text ending just
// before s[i] an object's key is (past blanks), 0 when none follows.
func keyColon(s string, i int) int {
	for ; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t':
			continue
		case ':':
			return i
		}
		return 0
	}
	return 0
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

// quoteOpens is where the value the quote at s[i] opens ends (the index
// of its closing quote), 0 when it opens none: it is an apostrophe between
// letters (two before it, one after: "can't", not b'abc'), no quote like
// it follows, or the next one runs into a letter, digit or underscore
// ("can't … won't" from its first apostrophe). Linear over a message: a
// quote's search ends at the next like it.
// (TestRev38ApostrophesInWordsDoNotMergeErrors)
func quoteOpens(s string, i int) int {
	c := s[i]
	if c == '\'' && i >= 2 && isLetter(s[i-1]) && isLetter(s[i-2]) && i+1 < len(s) && isLetter(s[i+1]) {
		return 0
	}
	end := strings.IndexByte(s[i+1:], c)
	if end < 0 {
		return 0
	}
	end += i + 1
	if end+1 < len(s) && (isLetter(s[end+1]) || s[end+1] >= '0' && s[end+1] <= '9' || s[end+1] == '_') {
		return 0
	}
	return end
}

func isLetter(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// topFrames is the top n lines of a stack, normalised, innermost first:
// a trace's first n lines that are not blank nor Go's "goroutine N
// [state]:", or a Python traceback's frames (pythonFrames).
func topFrames(stack string, n int) []string {
	if firstLine(stack) == pythonTracebackHeader {
		return pythonFrames(stack, n)
	}
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

// pythonTracebackHeader is the line a Python traceback starts with, and
// each traceback chained after it ("During handling of the above
// exception, another exception occurred:").
const pythonTracebackHeader = "Traceback (most recent call last):"

// pythonCause and pythonDuring are the lines Python prints between a
// traceback and the one chained after it: the exception raised last was
// raised from the one before it (raise X from e), or while handling it.
const (
	pythonCause  = "The above exception was the direct cause of the following exception:"
	pythonDuring = "During handling of the above exception, another exception occurred:"
)

// firstLine is the first line of s that is not blank, trimmed. Its search
// ends at that line.
func firstLine(s string) string {
	for s != "" {
		line, rest, _ := strings.Cut(s, "\n")
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
		s = rest
	}
	return ""
}

// pythonFrames is the innermost n frames of a Python traceback, innermost
// first. Python prints the outermost frame first, so the first lines are
// the header and the frames of <module> and main, the same in every
// failure of a worker: the frames are read from the end, back to the last
// traceback's header. With tracebacks chained, that last one is of the
// exception raised last, the one the consumer gave up on. When it has
// fewer than n frames and was raised from the one before it or while
// handling it (pythonCause, pythonDuring), the innermost frames of that
// one fill the rest: a worker that wraps every error (raise
// WorkerError(...) from e) has a last traceback of the same few frames
// (<module>, main, process) whatever failed, and where it failed is in
// the one before. Only that one: reading stops at its header. A frame is
// its "File" line alone (pythonFrame): the source line under it is
// missing when the source is not deployed, and Python 3.11 adds a line
// of carets under that. Reading back stops at n frames or at a header,
// each line read once: linear in the stack, however long and whatever it
// holds. (TestRev39WrappedErrorsGroupByWhereTheirCauseFailed)
func pythonFrames(stack string, n int) []string {
	var out []string
	cause := false // reading the traceback before the last
	for rest := stack; rest != "" && len(out) < n; {
		line := lastLine(&rest)
		if line == pythonTracebackHeader {
			if cause {
				break
			}
			between := ""
			for rest != "" && between == "" {
				between = lastLine(&rest)
			}
			if between != pythonCause && between != pythonDuring {
				break
			}
			cause = true
			continue
		}
		if f, ok := pythonFrame(line); ok {
			out = append(out, f)
		}
	}
	return out
}

// lastLine is the last line of *rest, trimmed, and cuts it off *rest.
func lastLine(rest *string) string {
	i := strings.LastIndexByte(*rest, '\n')
	line := strings.TrimSpace((*rest)[i+1:])
	*rest = (*rest)[:max(i, 0)]
	return line
}

// pythonFrame is a traceback's line `File "/app/billing/charge.py", line
// 12, in charge_card` as a Go frame's file line is taken: the path,
// unquoted (quoted it normalises to <q>, and every file is one) and
// without where Python put it (pythonPath), its line number (normalised
// to <#>, so an edit above the failure does not split its group) and the
// function, "/app/billing/charge.py:<#> in charge_card". A SyntaxError's
// own `File "…", line 3`, which names no function, is a frame too: it
// says where. Any other line is not one.
func pythonFrame(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, `File "`)
	if !ok {
		return "", false
	}
	path, rest, ok := strings.Cut(rest, `", line `)
	if !ok {
		return "", false
	}
	number, function, _ := strings.Cut(rest, ", in ")
	return NormaliseMessage(pythonPath(path) + ":" + number + " in " + function), true
}

// pythonPath is a frame's path from its package or module on: a
// package's, what follows the last site-packages/ or dist-packages/
// ("requests/adapters.py", wherever a venv or the image put it), the
// standard library's, what follows the last /lib/pythonX.Y/
// ("json/decoder.py"). Else the same error in the same code was a group
// per install location: /usr/local/lib/python3.11/site-packages and
// /opt/venv/lib/python3.12/site-packages. The application's own paths
// (/app/billing/charge.py) are kept as they are. One pass over the path.
// (TestRev39PythonPackagesGroupWhereverInstalled)
func pythonPath(path string) string {
	from := -1
	for _, dir := range [...]string{"site-packages/", "dist-packages/"} {
		if i := strings.LastIndex(path, dir); i >= 0 {
			from = max(from, i+len(dir))
		}
	}
	if from >= 0 {
		return path[from:]
	}
	for at := 0; ; {
		i := strings.Index(path[at:], "/lib/python")
		if i < 0 {
			break
		}
		at += i + len("/lib/python")
		if end := afterVersion(path[at:]); end >= 0 {
			from = at + end
		}
	}
	if from < 0 {
		return path
	}
	return path[from:]
}

// afterVersion is where s, after its leading "X.Y/" (digits, a dot,
// digits, and the t of a free-threaded build), goes on; -1 if s does not
// start so.
func afterVersion(s string) int {
	i, dot := 0, false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
		case c == '.' && !dot && i > 0 && s[i-1] != '.':
			dot = true
		case c == 't' && dot && s[i-1] != '.' && i+1 < len(s) && s[i+1] == '/':
		case c == '/' && dot && s[i-1] != '.':
			return i + 1
		default:
			return -1
		}
	}
	return -1
}
