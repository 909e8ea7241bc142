package dlq

import (
	"unicode/utf8"
)

// appendHeadersJSON appends hs as encoding/json marshals it (a JSON array
// of objects with name, name_encoding when set, value and encoding when
// set; null for a nil slice) and returns the result: the same document,
// written without reflection, for the headers column of every row. Strings
// are escaped as JSON requires and no more (encoding/json also escapes <, >,
// & and U+2028/9; jsonb keeps the decoded text, which is the same), and an
// invalid UTF-8 byte becomes U+FFFD, as encoding/json makes it.
func appendHeadersJSON(b []byte, hs []HeaderValue) []byte {
	if hs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, h := range hs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSONString(b, h.Name)
		if h.NameEncoding != "" {
			b = append(b, `,"name_encoding":`...)
			b = appendJSONString(b, h.NameEncoding)
		}
		b = append(b, `,"value":`...)
		b = appendJSONString(b, h.Value)
		if h.Encoding != "" {
			b = append(b, `,"encoding":`...)
			b = appendJSONString(b, h.Encoding)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
