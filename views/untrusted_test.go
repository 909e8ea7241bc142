package views_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"unicode"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/views"
)

func TestShown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, one, lines string
	}{
		{"Plain", "orders.created", "orders.created", "orders.created"},
		{"Empty", "", "", ""},
		{"RightToLeftOverride", "orders.\u202edetaerc", "orders.<U+202E>detaerc", "orders.<U+202E>detaerc"},
		{"Isolates", "a\u2066b\u2069c\u2067d\u2068e", "a<U+2066>b<U+2069>c<U+2067>d<U+2068>e", "a<U+2066>b<U+2069>c<U+2067>d<U+2068>e"},
		{"Marks", "\u200e\u200f\u061c", "<U+200E><U+200F><U+061C>", "<U+200E><U+200F><U+061C>"},
		{"ZeroWidth", "ad\u200bmin", "ad<U+200B>min", "ad<U+200B>min"},
		{"RunOfOne", "x\u200b\u200b\u200by", "x<U+200B ×3>y", "x<U+200B ×3>y"},
		{"Invisible", "\u00ad\u2060\u2064\ufeff", "<U+00AD><U+2060><U+2064><U+FEFF>", "<U+00AD><U+2060><U+2064><U+FEFF>"},
		{"Tags", "ok\U000E0041\U000E0042", "ok<U+E0041><U+E0042>", "ok<U+E0041><U+E0042>"},
		{"HangulFiller", "if\u3164x", "if<U+3164>x", "if<U+3164>x"},
		{"Controls", "a\x1b[2Jb\x7f\u0085", "a<U+001B>[2Jb<U+007F><U+0085>", "a<U+001B>[2Jb<U+007F><U+0085>"},
		{"LinesKeepBreaks", "a\tb\nc\r\nd", "a<U+0009>b<U+000A>c<U+000D><U+000A>d", "a\tb\nc\r\nd"},
		{"LineSeparator", "a\u2028b\u2029", "a<U+2028>b<U+2029>", "a<U+2028>b<U+2029>"},
		{"RightToLeftLettersStay", "שלום.orders", "שלום.orders", "שלום.orders"},
		{"EmojiPresentationStays", "\u2764\ufe0f ok", "\u2764\ufe0f ok", "\u2764\ufe0f ok"},
		{"SelectorSmuggling", "\U0001F600\U000E0100\U000E0101", "\U0001F600<U+E0100><U+E0101>", "\U0001F600<U+E0100><U+E0101>"},
		{"SelectorAtStart", "\ufe0fa\ufe0f\ufe0f", "<U+FE0F>a\ufe0f<U+FE0F>", "<U+FE0F>a\ufe0f<U+FE0F>"},
		{"NotUTF8", "bad\xffx", "bad<0xFF>x", "bad<0xFF>x"},
		{"LiteralMarkerStays", "<U+202E>", "<U+202E>", "<U+202E>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.one, views.Shown(tc.in))
			assert.Equal(t, tc.lines, views.ShownLines(tc.in))
			assert.Equal(t, tc.one != tc.in, views.HasHidden(tc.in))
			assert.Equal(t, tc.lines != tc.in, views.HasHiddenLines(tc.in))
		})
	}
}

// TestHiddenCoversTheDirectionControls pins what the standard library's
// tables give: every bidi control, and each character the Trojan Source
// paper and the console's own brief name, is a marker.
func TestHiddenCoversTheDirectionControls(t *testing.T) {
	t.Parallel()
	for _, rt := range []*unicode.RangeTable{unicode.Bidi_Control, unicode.Join_Control, unicode.Cf} {
		for _, r := range rangeRunes(rt) {
			assert.True(t, views.HasHiddenLines(string(r)), "U+%04X", r)
		}
	}
	for _, r := range []rune{0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F, 0x061C,
		0x200B, 0x200C, 0x200D, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF, 0x00AD, 0x0000, 0x001F, 0x0080, 0x009F} {
		assert.True(t, views.HasHiddenLines(string(r)), "U+%04X", r)
	}
}

func rangeRunes(rt *unicode.RangeTable) []rune {
	var out []rune
	for _, r16 := range rt.R16 {
		for r := rune(r16.Lo); r <= rune(r16.Hi); r += rune(r16.Stride) {
			out = append(out, r)
		}
	}
	for _, r32 := range rt.R32 {
		for r := rune(r32.Lo); r <= rune(r32.Hi); r += rune(r32.Stride) {
			out = append(out, r)
		}
	}
	return out
}

func TestUntrusted(t *testing.T) {
	t.Parallel()
	in := "orders.\u202edetaerc\u200b<b>x</b>\u2066"
	doc, html := render(t, views.Untrusted(in))
	root := doc.Find("bdi.ut")
	require.Equal(t, 1, root.Length())
	assert.Equal(t, "ltr", root.AttrOr("dir", ""), "the value is isolated, left to right")
	assert.Equal(t, views.Shown(in), root.Text())
	assert.Equal(t, "orders.<U+202E>detaerc<U+200B><b>x</b><U+2066>", root.Text())
	markers := root.Find("bdi.uc")
	assert.Equal(t, 3, markers.Length())
	assert.Contains(t, markers.First().AttrOr("title", ""), "U+202E RIGHT-TO-LEFT OVERRIDE")
	assert.Zero(t, doc.Find("b").Length(), "text, not markup")
	assert.NotContains(t, html, "\u202e")
	assert.NotContains(t, html, "\u200b")

	doc, _ = render(t, views.UntrustedLines("at main.go:1\n\tat \u2067x"))
	assert.Equal(t, "at main.go:1\n\tat <U+2067>x", doc.Find("bdi.ut").Text())

	// A block's whole content: no wrapper, and no element without a hidden
	// character.
	var buf bytes.Buffer
	require.NoError(t, views.UntrustedBlock("<b>x</b>\n\ty").Render(context.Background(), &buf))
	assert.Equal(t, "&lt;b&gt;x&lt;/b&gt;\n\ty", buf.String())
	buf.Reset()
	require.NoError(t, views.UntrustedBlock("a\u202eb").Render(context.Background(), &buf))
	assert.True(t, strings.HasPrefix(buf.String(), `a<bdi class="uc" dir="ltr" title="U+202E RIGHT-TO-LEFT OVERRIDE`), buf.String())
}

func FuzzUntrusted(f *testing.F) {
	for _, s := range []string{"", "orders.\u202edetaerc", "a\u200b\u200bb", "\ufe0f\ufe0f", "bad\xff\xfe", "<U+202E>", "x\r\ny\t"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, lines bool) {
		c, want := views.Untrusted(s), views.Shown(s)
		if lines {
			c, want = views.UntrustedLines(s), views.ShownLines(s)
		}
		var buf bytes.Buffer
		require.NoError(t, c.Render(context.Background(), &buf))
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(buf.String()))
		require.NoError(t, err)
		got := doc.Find("bdi.ut").Text()
		// HTML reads a carriage return as a line feed, and a NUL as U+FFFD.
		assert.Equal(t, strings.ReplaceAll(strings.ReplaceAll(want, "\r\n", "\n"), "\r", "\n"), got)
		assert.False(t, views.HasHiddenLines(got), "%q shows a hidden character", got)
		if lines {
			assert.False(t, views.HasHiddenLines(want))
		} else {
			assert.False(t, views.HasHidden(want))
		}
	})
}
