package views

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/a-h/templ"
	"golang.org/x/text/unicode/runenames"
)

// A value that came from a message (or that any person typed) may hold
// characters a browser does not show as themselves: direction controls
// that reorder the text around them ("Trojan Source": a subject
// "orders.\u202edetaerc" reads "orders.created"), and characters that
// show as nothing at all (zero-width spaces, joiners, fillers, tags).
// Untrusted, UntrustedLines and UntrustedBlock write such a value so that
// a person reads it as it is: every such character as a visible marker
// "<U+202E>", and the whole value isolated (<bdi dir="ltr">, or the block
// it fills), so that it cannot reorder the page around it either.
//
// The set is taken from the standard library's Unicode tables, kept in
// step with Unicode by the Go team, rather than a list written here:
//
//   - Cc, control characters (C0, DEL, C1): invisible or, in a terminal
//     a person pastes into, active. Tab, line feed and carriage return stay
//     in a multi-line text (a stack trace, a payload), and are markers in
//     a one-line value (a subject, an id).
//   - Cf, format characters: every bidi control (Bidi_Control: U+061C,
//     U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), zero-width space and
//     joiners (U+200B-U+200D), word joiner and invisible operators
//     (U+2060-U+2064), the byte order mark U+FEFF, the soft hyphen U+00AD,
//     the tag characters (U+E0000 block: "ASCII smuggling") and the rest.
//   - Zl and Zp, U+2028 and U+2029: a line break that is not a line feed,
//     and a paragraph separator that ends the bidi paragraph.
//   - Other_Default_Ignorable_Code_Point: blank fillers (U+115F, U+1160,
//     U+3164, U+FFA0: "invisible identifiers"), U+034F and the code points
//     Unicode reserves to be ignorable (U+2065, U+FFF0-U+FFF8, ...).
//   - Variation_Selector: they change the glyph before them and can carry
//     bytes nobody sees ("emoji smuggling"). U+FE0E and U+FE0F (text and
//     emoji presentation) right after a visible character are left alone,
//     as emoji use them; anywhere else they are markers too.
//
// Left alone: letters of right-to-left scripts (the isolation keeps them
// inside their value), spaces other than U+0020 (they show as space),
// private-use and unassigned code points (they show as a box), and look-
// alike letters (homoglyphs), which no rendering can tell apart.

// Shown is s as a one-line value shows it: every hidden or direction-
// changing character (tab and line breaks too) written as its marker
// "<U+202E>" (a run of the same one "<U+200B ×3>"), a byte that is not
// UTF-8 as "<0xFF>". It is for where markup cannot go: title attributes,
// option labels, page titles. Without such characters it is s.
func Shown(s string) string { return shown(s, false) }

// ShownLines is Shown for a multi-line text: tab, line feed and carriage
// return stay as they are.
func ShownLines(s string) string { return shown(s, true) }

// HasHidden reports whether Shown would write a marker in s.
func HasHidden(s string) bool { return firstHidden(s, false) >= 0 }

// HasHiddenLines reports whether ShownLines would write a marker in s.
func HasHiddenLines(s string) bool { return firstHidden(s, true) >= 0 }

// Untrusted writes a one-line value (a subject, a tenant, an id, a
// header) as text a person reads as it is: isolated in <bdi dir="ltr">,
// each hidden or direction-changing character a marker <bdi class="uc">
// holding the text Shown writes, with the character's name in its title.
// The text of the element is Shown(s). Copy buttons and downloads carry
// the value itself, not this.
func Untrusted(s string) templ.Component { return untrusted(s, false, true) }

// UntrustedLines is Untrusted for a multi-line text (an error, a stack
// trace, a payload, a reason): tab, line feed and carriage return stay.
// The text of the element is ShownLines(s).
func UntrustedLines(s string) templ.Component { return untrusted(s, true, true) }

// UntrustedBlock is UntrustedLines for the whole content of a block of its
// own (the <pre> of an error, a stack trace, a payload): the block is the
// isolation (a bidi paragraph ends with it, and it takes the page's left-
// to-right direction), so no <bdi> wraps the text, and a text without
// hidden characters makes no element at all.
func UntrustedBlock(s string) templ.Component { return untrusted(s, true, false) }

// untrustedOpen starts an isolated value. dir="ltr" rather than auto: the
// console is written left to right, and a value's parts (the tokens of a
// subject, the segments of an id) then read in the order they are stored
// whatever script the first of them is in.
const untrustedOpen = `<bdi class="ut" dir="ltr">`

func untrusted(s string, lines, isolate bool) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		var b strings.Builder
		b.Grow(len(s) + len(untrustedOpen) + len("</bdi>"))
		if isolate {
			b.WriteString(untrustedOpen)
		}
		eachPart(s, lines, func(text string, m *marker) {
			if m == nil {
				b.WriteString(templ.EscapeString(text))
				return
			}
			b.WriteString(`<bdi class="uc" dir="ltr" title="`)
			b.WriteString(templ.EscapeString(m.title()))
			b.WriteString(`">`)
			b.WriteString(templ.EscapeString(m.text()))
			b.WriteString(`</bdi>`)
		})
		if isolate {
			b.WriteString("</bdi>")
		}
		_, err := io.WriteString(w, b.String())
		return err
	})
}

func shown(s string, lines bool) string {
	if firstHidden(s, lines) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	eachPart(s, lines, func(text string, m *marker) {
		if m != nil {
			text = m.text()
		}
		b.WriteString(text)
	})
	return b.String()
}

// marker is a run of one hidden character (r), n times, or one byte that
// is not UTF-8 (invalid set, r the byte).
type marker struct {
	r       rune
	n       int
	invalid bool
}

func (m marker) text() string {
	if m.invalid {
		return fmt.Sprintf("<0x%02X>", m.r)
	}
	if m.n > 1 {
		return fmt.Sprintf("<U+%04X ×%d>", m.r, m.n)
	}
	return fmt.Sprintf("<U+%04X>", m.r)
}

func (m marker) title() string {
	if m.invalid {
		return "A byte that is not UTF-8 text"
	}
	name := runenames.Name(m.r)
	if name == "" || strings.HasPrefix(name, "<") {
		name = "control character" // runenames calls every Cc "<control>"
	}
	t := "U+" + fmt.Sprintf("%04X", m.r) + " " + name
	if m.n > 1 {
		t += ", " + strconv.Itoa(m.n) + " in a row"
	}
	return t + ": hidden or direction-changing, shown as its code"
}

// eachPart calls f for each run of s: plain text (m nil), or one marker.
func eachPart(s string, lines bool, f func(text string, m *marker)) {
	start := 0 // of the plain text not yet written
	prev := rune(-1)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		invalid := r == utf8.RuneError && size == 1
		if !invalid && !hidden(r, prev, lines) {
			prev = r
			i += size
			continue
		}
		if start < i {
			f(s[start:i], nil)
		}
		m := marker{r: r, n: 1, invalid: invalid}
		if invalid {
			m.r = rune(s[i])
		}
		i += size
		for !invalid && i < len(s) {
			r2, size2 := utf8.DecodeRuneInString(s[i:])
			if r2 != r {
				break
			}
			m.n++
			i += size2
		}
		f("", &m)
		prev, start = -1, i
	}
	if start < len(s) {
		f(s[start:], nil)
	}
}

// firstHidden is the byte offset of the first character of s that
// Shown (lines false) or ShownLines would write as a marker, or -1.
func firstHidden(s string, lines bool) int {
	prev := rune(-1)
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
		if hidden(r, prev, lines) {
			return i
		}
		prev = r
	}
	return -1
}

// hidden reports whether r is shown as a marker, after prev (-1: at the
// start, or after a marker). See the comment at the top of this file.
func hidden(r, prev rune, lines bool) bool {
	switch {
	case r < 0x20:
		return !lines || r != '\t' && r != '\n' && r != '\r'
	case r < 0x7f:
		return false // printable ASCII: the fast path
	case r == 0xFE0E || r == 0xFE0F:
		return prev < 0 || unicode.Is(unicode.Variation_Selector, prev)
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

const hiddenFlagTitle = "Contains hidden or direction-changing characters, each shown boxed as its code (<U+202E>). " +
	"Copy buttons and downloads keep the exact value."

// untrustedList writes values joined by ", ", each isolated on its own
// (Untrusted), so that one cannot reorder the others. Its text is
// Shown(strings.Join(vs, ", ")).
func untrustedList(vs []string) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		for i, v := range vs {
			if i > 0 {
				if _, err := io.WriteString(w, ", "); err != nil {
					return err
				}
			}
			if err := Untrusted(v).Render(ctx, w); err != nil {
				return err
			}
		}
		return nil
	})
}
