package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/a-h/templ"
)

// Models of the message detail: one dead letter in full, its headers and
// its payload as the page shows it.

// DeadLetterDetailModel is one dead letter in full.
type DeadLetterDetailModel struct {
	ID       int64
	Tenant   string
	ItemType string
	Status   string
	Version  int32

	// PolicyClass is the class a replay of it is judged at (its item type
	// and subject, its error class's floor, the generation limit:
	// replaypolicy.Table.Classify) and PolicyText what a replay of it
	// needs (replaypolicy.Table.Describe); PolicyRule the item-type glob
	// (and subject) that matched, empty when none did; PolicyRaised why the
	// class is stricter than that rule's, "" when it is not.
	PolicyClass  string
	PolicyText   string
	PolicyRule   string
	PolicyRaised string

	Subject         string
	OriginalSubject string
	SourceKind      string
	SourceStream    string
	SourceSeq       int64 // 0: unknown
	SourceConsumer  string
	MsgID           string
	MsgIDDerived    bool
	OperationID     string
	CorrelationID   string
	Principal       string
	Consumer        string

	Error          string
	ErrorClass     string
	Attempts       string
	FirstFailedAt  time.Time
	LastFailedAt   time.Time
	DeadLetteredAt time.Time
	ReceivedAt     time.Time
	UpdatedAt      time.Time
	// Retention is when the active retention terms remove it (nil: they
	// keep it for good, or the terms in force are not known here).
	Retention *RetentionNotice
	Stack     string
	// ErrorSize and StackSize are the whole sizes in bytes of the error and
	// the stack trace when the page shows only their start (Error and Stack
	// are cut to at most TextShownMax), 0 otherwise; ErrorURL and StackURL
	// download them whole.
	ErrorSize, StackSize int64
	ErrorURL, StackURL   string
	// IDSizes holds, by label ("Message id", "Operation id"...), the whole
	// size of each identity value the page shows only the start of.
	IDSizes map[string]int64

	Headers []HeaderRow
	// HeadersMore is how many headers the dead letter holds past those in
	// Headers (the page shows a bounded number).
	HeadersMore int
	// HeadersURL downloads every header whole, when the page leaves some
	// out or cuts a value.
	HeadersURL string
	// ReplayAdds are the headers a replay sets of its own (the original
	// message id and operation and correlation ids, what it replays),
	// beside the received ones it sends.
	ReplayAdds       []string
	Malformed        bool
	MalformedReasons []string
	// Flags are the codes of what was flagged on arrival (oversized:msg_id,
	// raw_form...); MalformedReasons says each in a sentence.
	Flags []string
	// HeaderBlock is the header block as the stream stored it (Size 0: not
	// kept); HeaderBlockNote says whether it is exact or written again.
	HeaderBlock     PayloadView
	HeaderBlockNote string
	// Delivery names the stream message the row was made from (its unique
	// key: stream, sequence and the time the stream stored it); DeliveryName
	// and DeliveryStoredAt are its parts as the page shows them, when it
	// reads as such a key (DeliveryName "": show Delivery).
	Delivery         string
	DeliveryName     string
	DeliveryStoredAt time.Time
	Payload          PayloadView
	Advisory         string // pretty JSON of the advisory, for advisory rows

	Fingerprint string
	GroupURL    string
	Audit       []AuditRow
	// ListURL leads back to the list.
	ListURL string
	Now     time.Time
	// ReplayPanel is rendered where the actions go (replay, discard,
	// resolve). Nil renders nothing.
	ReplayPanel templ.Component
}

// How much of one text the detail page shows: a producer may send an error
// or a stack trace of megabytes (2.6 MB of "<" made a page of 10 MB) and ids
// of kilobytes. The dead letter keeps every value whole. An error or a stack
// trace is cut where it is read (dlq.PreviewTextMax, the same 64 KiB).
const (
	TextShownMax = 64 << 10 // an error or a stack trace
	IDShownMax   = 1 << 10  // a message, operation or correlation id, a subject, a principal
)

// HeaderRow is one received header value. Binary values (not valid UTF-8,
// or holding NUL) are shown as base64 with Binary set.
type HeaderRow struct {
	Name   string
	Value  string
	Binary bool
	// Cut says Value is only the start of a value too long for the page.
	Cut bool
	// NotSent says a replay leaves this header out (replay.Sent: Nats-*,
	// Dlq-*, an earlier hop's, a name that is not text).
	NotSent bool
}

// Payload kinds.
const (
	PayloadJSON        = "json"
	PayloadText        = "text"
	PayloadBinary      = "binary"
	PayloadEmpty       = "empty"
	PayloadUnavailable = "unavailable"
)

// PayloadView is a payload as the detail page shows it.
type PayloadView struct {
	// Kind is one of the Payload* constants.
	Kind string
	// Text is the pretty-printed JSON, the text, or the hex dump.
	Text string
	// Size is the whole payload's size in bytes; Shown how many of them
	// Text covers (less when the payload was truncated).
	Size      int64
	Shown     int64
	Truncated bool
	SHA256    string
	// DownloadURL downloads the raw payload; empty when the user may not.
	DownloadURL string
}

// NewPayloadView classifies data (the first bytes of a payload of size
// bytes): pretty-printed JSON when the whole payload is there and is JSON,
// text when it is valid UTF-8 without control characters, a hex dump
// otherwise.
func NewPayloadView(data []byte, size int64, unavailable bool) PayloadView {
	v := PayloadView{Size: size, Shown: int64(len(data)), Truncated: int64(len(data)) < size}
	switch {
	case unavailable:
		v.Kind = PayloadUnavailable
	case size == 0:
		v.Kind = PayloadEmpty
	case !v.Truncated && json.Valid(data):
		var buf bytes.Buffer
		if err := json.Indent(&buf, data, "", "  "); err == nil {
			v.Kind, v.Text = PayloadJSON, buf.String()
			break
		}
		v.Kind, v.Text = PayloadText, string(data)
	case isText(data, v.Truncated):
		v.Kind, v.Text = PayloadText, string(data)
		if v.Truncated {
			v.Text = strings.ToValidUTF8(v.Text, "") // a rune cut at the end
		}
	default:
		v.Kind, v.Text = PayloadBinary, HexDump(data)
	}
	return v
}

// isText reports whether data reads as text: valid UTF-8 (a rune cut at the
// end of a truncated payload is fine) without control characters other
// than tab, newline and carriage return.
func isText(data []byte, truncated bool) bool {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			if truncated && len(data)-i < utf8.UTFMax && !utf8.FullRune(data[i:]) {
				return true
			}
			return false
		}
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
		i += n
	}
	return true
}

// HexDump writes data like hexdump -C: offset, sixteen bytes in hex, and
// the printable ASCII of them.
func HexDump(data []byte) string {
	var b strings.Builder
	b.Grow(len(data)/16*78 + 78)
	for off := 0; off < len(data); off += 16 {
		line := data[off:min(off+16, len(data))]
		fmt.Fprintf(&b, "%08x  ", off)
		for i := range 16 {
			if i < len(line) {
				fmt.Fprintf(&b, "%02x ", line[i])
			} else {
				b.WriteString("   ")
			}
			if i == 7 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(" |")
		for _, c := range line {
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				b.WriteByte('.')
			}
		}
		b.WriteString("|\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func payloadKindText(kind string) string {
	switch kind {
	case PayloadJSON:
		return "JSON, pretty-printed"
	case PayloadText:
		return "text"
	case PayloadBinary:
		return "binary, hex dump"
	}
	return kind
}

// HiddenIn names the values of the dead letter, as the page shows them,
// that hold hidden or direction-changing characters (HasHidden for one-line
// values, HasHiddenLines for texts): "Error", "Header X-Evil". The page
// says so above everything else, so that the on-call reads the markers as
// what they are.
func (m DeadLetterDetailModel) HiddenIn() []string {
	var out []string
	for _, v := range []struct {
		name, value string
		lines       bool
	}{
		{"Tenant", m.Tenant, false}, {"Item type", m.ItemType, false}, {"DLQ subject", m.Subject, false},
		{"Original subject", m.OriginalSubject, false}, {"Message id", m.MsgID, false},
		{"Operation id", m.OperationID, false}, {"Correlation id", m.CorrelationID, false},
		{"Principal", m.Principal, false}, {"Consumer", m.Consumer, true}, {"Stream message", m.Delivery, true},
		{"Error", m.Error, true}, {"Stack trace", m.Stack, true},
		{"Payload", payloadText(m.Payload), true}, {"Header block", payloadText(m.HeaderBlock), true},
	} {
		if v.lines && HasHiddenLines(v.value) || !v.lines && HasHidden(v.value) {
			out = append(out, v.name)
		}
	}
	for _, h := range m.Headers {
		if HasHidden(h.Name) || HasHidden(h.Value) {
			out = append(out, "Header "+h.Name)
		}
	}
	return out
}

// payloadText is the text of a payload view that shows text (a hex dump
// shows no character of the payload), or "".
func payloadText(v PayloadView) string {
	if v.Kind == PayloadText || v.Kind == PayloadJSON {
		return v.Text
	}
	return ""
}

// RetentionNotice is when retention removes a dead letter: from From, its
// status (Status) being kept Keep, counted from the later of when it was
// dead-lettered and when the console received it; or, HeldBy set, never
// while that replay request (in HeldStatus: a draft, say) names it.
// Unresolved and Soon (within a week) make it a warning: the next action
// has a deadline.
type RetentionNotice struct {
	From       time.Time
	Keep       string
	Status     string
	Unresolved bool
	Soon       bool
	HeldBy     int64
	HeldStatus string
}
