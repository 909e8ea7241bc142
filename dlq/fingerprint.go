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
// (of the last traceback, then of the one it was raised from), and a Java
// trace with causes from its innermost cause's line (javaFrames).
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
//
// A body also arrives quoted or escaped: printed with Go's %q ("{\"error\":
// …}"), as Python's bytes (b'{"error": …}'), in quotes ('{"error": …}'), or
// nested by a gateway in another's message ({"error":"upstream:
// {\"error\": …}"}). A quote after an odd number of backslashes is
// escaped: it ends no value opened by a quote that is not, and it opens a
// value that the next quote escaped alike (one backslash) ends. A quoted
// value that is itself an object or a list ({ or [ then a quote, a
// bracket or a brace: bodyValue) is read as the rest of a message is, as
// are keys and message keys' values, one level of escapes taken off
// (unescape). As <q>, every such body of one endpoint was one group
// (review round 43). Values are read so inside at most maxQuoteNesting
// others; deeper ones are <q>.
func NormaliseMessage(s string) string {
	return normalise(s, 0)
}

// maxQuoteNesting is how many quoted values deep NormaliseMessage reads a
// key, a message key's value or a body: each level reads its text once
// more, so a message of quotes in quotes costs at most this many passes.
const maxQuoteNesting = 4

// normalise is NormaliseMessage of s, a value quoted nested levels deep
// (0: the message itself).
func normalise(s string, nested int) string {
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
		case c == '"' || c == '\'' || c == '\\':
			flushSpace(&b, &space)
			q, end := quoted(s, i)
			if end == 0 {
				// A quote that opens nothing, or a backslash. One that
				// escapes a backslash or a quote is written with it:
				// that quote is escaped, not one to read again.
				b.WriteByte(c)
				i++
				if c == '\\' && i < len(s) && (s[i] == '\\' || s[i] == '"' || s[i] == '\'') {
					b.WriteByte(s[i])
					last = s[i]
					i++
				}
				continue
			}
			text := s[q+1 : end-(q-i)] // less the backslash of an escaped closing quote
			colon := 0
			if depth > 0 && (before == '{' || before == ',') && fieldName(text) {
				colon = keyColon(s, end+1)
			}
			if nested < maxQuoteNesting && (afterKey || colon > 0 || bodyValue(text)) { // a key, a message key's value or a body
				b.WriteByte(s[q])
				b.WriteString(normalise(unescape(text), nested+1))
				b.WriteByte(s[q])
			} else {
				b.WriteString("<q>")
			}
			if colon > 0 {
				b.WriteByte(':')
				i, value = colon+1, messageKeys[lowerASCII(text)]
				continue
			}
			i = end + 1
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

// quoted reads the value a quote opens at s[i], or at s[i+1] after the
// backslash at s[i] that escapes it (one backslash alone: of two, the
// first escapes the second): q is that quote and end the one that closes
// the value (quoteOpens, escapedQuoteOpens), 0 when it opens none.
func quoted(s string, i int) (q, end int) {
	if s[i] != '\\' {
		return i, quoteOpens(s, i)
	}
	if (i == 0 || s[i-1] != '\\') && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\'') {
		return i + 1, escapedQuoteOpens(s, i+1)
	}
	return i, 0
}

// quoteOpens is where the value the quote at s[i] opens ends (the index
// of its closing quote), 0 when it opens none: it is an apostrophe between
// letters (two before it, one after: "can't", not b'abc'), no quote like
// it follows that is not escaped (after an odd number of backslashes:
// "{\"error\": …}" is one value), or the next one runs into a letter,
// digit or underscore ("can't … won't" from its first apostrophe).
// Linear over a message: a quote's search ends at the next like it that
// is not escaped, and only such a quote starts one.
// (TestRev38ApostrophesInWordsDoNotMergeErrors)
func quoteOpens(s string, i int) int {
	c := s[i]
	if c == '\'' && i >= 2 && isLetter(s[i-1]) && isLetter(s[i-2]) && i+1 < len(s) && isLetter(s[i+1]) {
		return 0
	}
	return closingQuote(s, c, i+1, func(end int) bool { return backslashes(s, end)%2 == 0 })
}

// escapedQuoteOpens is quoteOpens of the quote at s[q] escaped by one
// backslash (\" in a message that is a body's escaped text): where the
// next like quote escaped by one backslash alone is, 0 when none follows,
// it runs into a word or the quote is an apostrophe between letters
// (don\'t). A quote escaped twice over (\\\") is in the value, as an
// escaped quote is in one quoted plainly. Linear as quoteOpens: such a
// quote alone starts a search and ends one.
func escapedQuoteOpens(s string, q int) int {
	c := s[q]
	if c == '\'' && q >= 3 && isLetter(s[q-2]) && isLetter(s[q-3]) && q+1 < len(s) && isLetter(s[q+1]) {
		return 0
	}
	return closingQuote(s, c, q+1, func(end int) bool { return end > q+1 && backslashes(s, end) == 1 })
}

// closingQuote is the index of the first c at or after from for which
// closes reports true (judged by the backslashes before it); 0 when there
// is none, or when it runs into a word.
func closingQuote(s string, c byte, from int, closes func(end int) bool) int {
	end := from
	for {
		j := strings.IndexByte(s[end:], c)
		if j < 0 {
			return 0
		}
		end += j
		if closes(end) {
			break
		}
		end++
	}
	if runsIntoWord(s, end+1) {
		return 0
	}
	return end
}

// backslashes is how many backslashes there are just before s[i]. Each
// run is counted for the quote after it alone.
func backslashes(s string, i int) int {
	n := 0
	for i > n && s[i-n-1] == '\\' {
		n++
	}
	return n
}

// runsIntoWord reports whether s[i] is a letter, digit or underscore: a
// quote before it closes no value.
func runsIntoWord(s string, i int) bool {
	return i < len(s) && (isLetter(s[i]) || s[i] >= '0' && s[i] <= '9' || s[i] == '_')
}

// bodyValue reports whether s, the text of a quoted value, is an object
// or a list itself, as a body quoted or escaped is: { or [, then (past
// blanks, and a backslash escaping a quote) a quote, a brace or a
// bracket. A value of another shape ('{alice}', "[x]") is a value.
func bodyValue(s string) bool {
	s = strings.TrimLeft(s, " \t\r\n")
	if s == "" || s[0] != '{' && s[0] != '[' {
		return false
	}
	s = strings.TrimLeft(s[1:], " \t\r\n")
	if len(s) > 1 && s[0] == '\\' {
		s = s[1:]
	}
	return s != "" && strings.IndexByte(`"'{}[]`, s[0]) >= 0
}

// unescape takes one level of escapes off a quoted value's text: \" \' \\
// and \/ are the character, \n, \r and \t a blank; any other backslash
// is kept.
func unescape(s string) string {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for ; i >= 0; i = strings.IndexByte(s, '\\') {
		b.WriteString(s[:i])
		if i+1 == len(s) {
			s = s[i:]
			break
		}
		switch e := s[i+1]; e {
		case '"', '\'', '\\', '/':
			b.WriteByte(e)
		case 'n', 'r', 't':
			b.WriteByte(' ')
		default:
			b.WriteString(s[i : i+2])
		}
		s = s[i+2:]
	}
	b.WriteString(s)
	return b.String()
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
// [state]:", a Python traceback's frames (pythonFrames), or a Java trace's
// innermost cause (javaFrames).
func topFrames(stack string, n int) []string {
	if pythonTraceback(stack) {
		return pythonFrames(stack, n)
	}
	if at := javaCauseAt(stack); at >= 0 {
		return javaFrames(stack, at, n)
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
// exception, another exception occurred:"); pythonGroupHeader is that of
// an exception group's (Python 3.11: ExceptionGroup, asyncio's TaskGroup).
const (
	pythonTracebackHeader = "Traceback (most recent call last):"
	pythonGroupHeader     = "Exception Group " + pythonTracebackHeader
)

// pythonCause and pythonDuring are the lines Python prints between a
// traceback and the one chained after it: the exception raised last was
// raised from the one before it (raise X from e), or while handling it.
const (
	pythonCause  = "The above exception was the direct cause of the following exception:"
	pythonDuring = "During handling of the above exception, another exception occurred:"
)

// pythonTraceback reports whether a line of stack, without an exception
// group's margin (pythonLine), is a traceback's header or a frame's
// "File" line (pythonFrame): the stack is a Python traceback, whatever a
// logger printed above it (a time and a message, a line or a few), and
// when it was cut above its header. Before, only a stack whose first
// line was the header was read so, and a group's, a logged one and a cut
// one were read as a trace's first lines: outermost, every path <q>
// (TestRev43WrappedExceptionsGroupByTheirCause). A stack holding neither
// text is read twice, fast; another up to the first such line.
func pythonTraceback(stack string) bool {
	if !strings.Contains(stack, pythonTracebackHeader) && !strings.Contains(stack, `File "`) {
		return false
	}
	for line := range strings.SplitSeq(stack, "\n") {
		text, _ := pythonLine(line)
		if text == pythonTracebackHeader || text == pythonGroupHeader {
			return true
		}
		if _, _, _, ok := pythonFrameParts(text); ok {
			return true
		}
	}
	return false
}

// pythonLine is a line of a Python traceback, trimmed, without the margin
// an exception group prints before each of its lines ("  | ", or "  + "
// before its header and its sub-exceptions' separators), and the column
// of that margin, -1 if it has none. A sub-exception's lines are indented
// two columns more than its group's.
func pythonLine(line string) (string, int) {
	col := 0
	for col < len(line) && (line[col] == ' ' || line[col] == '\t') {
		col++
	}
	if col < len(line) && (line[col] == '|' || line[col] == '+') {
		return strings.TrimSpace(line[col+1:]), col
	}
	return strings.TrimSpace(line[col:]), -1
}

// pythonSubException reports whether text (pythonLine's, of a line whose
// margin was "+") is the separator an exception group prints before
// each of its sub-exceptions, "+-+---------------- 1 ----------------"
// and "+---------------- 2 ----------------" (or "..." for those past
// max_group_width), not the line of dashes that closes the last.
func pythonSubException(text string) bool {
	return strings.HasPrefix(text, "-") && strings.Trim(text, "+- ") != ""
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
//
// An exception group (pythonGroupHeader) prints its own traceback, then
// each sub-exception's, a margin before every line (pythonLine). Its
// last sub-exception's last traceback is read first, as the last
// traceback is; when it is the sub-exception's only one, the group's
// frames fill the rest, as a cause's do: the other sub-exceptions'
// lines, in a margin further right, are passed over. Before, the group's
// outermost lines were taken as a trace's, every path <q>, and every
// failure in a TaskGroup was one group
// (TestRev43WrappedExceptionsGroupByTheirCause).
func pythonFrames(stack string, n int) []string {
	var out []string
	cause := false // reading the traceback before the last, or the group's
	sub := -1      // while >= 0: passing over sub-exceptions with their margin from this column
	for rest := stack; rest != "" && len(out) < n; {
		line, margin := pythonLine(lastLine(&rest))
		if sub >= 0 {
			if margin < 0 || margin >= sub {
				continue
			}
			sub = -1
		}
		if line == pythonTracebackHeader || line == pythonGroupHeader {
			if cause {
				break
			}
			between, at := "", -1
			for rest != "" && between == "" {
				between, at = pythonLine(lastLine(&rest))
			}
			switch {
			case between == pythonCause || between == pythonDuring:
			case at >= 0 && pythonSubException(between):
				sub = margin
			default:
				return out
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

// lastLine is the last line of *rest and cuts it off *rest.
func lastLine(rest *string) string {
	i := strings.LastIndexByte(*rest, '\n')
	line := (*rest)[i+1:]
	*rest = (*rest)[:max(i, 0)]
	return line
}

// javaCause starts the line of each exception a Java (or Kotlin, Scala)
// trace says the one above it was caused by.
const javaCause = "Caused by: "

// javaCauseAt is where the last cause line of stack starts (javaCause, no
// further right than the trace's first line: a cause of a suppressed
// exception is indented more), -1 when it has none. It reads back from
// the end, and judges each line with javaCause in it once, by its start:
// only a line's first javaCause may start it. Judged match by match, a
// line of thousands of them (a hostile Dlq-Stack, or a trace escaped
// onto one line) read back to the line's start for each, in time that
// grew as the square of the line's length, while the ingester's writer
// held its batch (review round 44; BenchmarkFingerprintHostileStacks).
func javaCauseAt(stack string) int {
	if !strings.Contains(stack, javaCause) { // most stacks: one fast pass
		return -1
	}
	indent := len(stack) - len(strings.TrimLeft(stack, " \t\r\n"))
	indent -= strings.LastIndexByte(stack[:indent], '\n') + 1
	for rest := stack; ; {
		i := strings.LastIndex(rest, javaCause)
		if i < 0 {
			return -1
		}
		start := strings.LastIndexByte(rest[:i], '\n') + 1
		line := strings.TrimLeft(rest[start:i+len(javaCause)], " \t")
		if i+len(javaCause)-start-len(line) <= indent && strings.HasPrefix(line, javaCause) {
			return start
		}
		rest = rest[:start]
	}
}

// javaFrames is the top n lines of a Java trace whose exception was
// caused by others (javaCause): the innermost cause's line and its
// frames, the "at" lines under it. A framework that wraps what a
// listener threw (Spring's ListenerExecutionFailedException, "Listener
// method … threw exception") has the same first lines whatever failed;
// what failed, and where, is in its last cause. When that one has fewer
// frames than n lines take ("... 12 more": Java leaves out those its
// enclosing trace printed), the frames of the trace that encloses it
// fill the rest, then of the one enclosing that, innermost first. A
// cause's "Suppressed:" exceptions are not read. Before, the wrapper's
// first lines were read alone, and every failure under one listener was
// one group (TestRev43WrappedExceptionsGroupByTheirCause). A trace
// without causes is read as before: its first n lines.
func javaFrames(stack string, at, n int) []string {
	line, frames, _ := strings.Cut(stack[at:], "\n")
	out := []string{NormaliseMessage(strings.TrimSpace(line))}
	out = javaAtLines(out, frames, n)
	for len(out) < n && at > 0 {
		enclosing := stack[:at-1]
		if at = javaCauseAt(enclosing); at >= 0 {
			_, frames, _ = strings.Cut(enclosing[at:], "\n")
		} else {
			at, frames = 0, enclosing
		}
		out = javaAtLines(out, frames, n)
	}
	return out
}

// javaAtLines appends to out, up to n lines, the frames ("at …" lines,
// normalised) of one trace, until its first "Suppressed:" or cause line.
func javaAtLines(out []string, trace string, n int) []string {
	for line := range strings.SplitSeq(trace, "\n") {
		if len(out) >= n {
			break
		}
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "Suppressed: ") || strings.HasPrefix(line, javaCause) {
			break
		}
		if strings.HasPrefix(line, "at ") {
			out = append(out, NormaliseMessage(line))
		}
	}
	return out
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
	path, number, function, ok := pythonFrameParts(line)
	if !ok {
		return "", false
	}
	return NormaliseMessage(pythonPath(path) + ":" + number + " in " + function), true
}

// pythonFrameParts is the path, line number and function of a frame's
// "File" line (pythonFrame); ok is false for any other line.
func pythonFrameParts(line string) (path, number, function string, ok bool) {
	rest, ok := strings.CutPrefix(line, `File "`)
	if !ok {
		return "", "", "", false
	}
	path, rest, ok = strings.Cut(rest, `", line `)
	if !ok {
		return "", "", "", false
	}
	number, function, _ = strings.Cut(rest, ", in ")
	return path, number, function, true
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
