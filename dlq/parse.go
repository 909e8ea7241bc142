package dlq

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Received is a message as it came off a stream: the input of Parse.
type Received struct {
	Subject string
	Header  map[string][]string
	Data    []byte
	Stream  string    // stream that stored it
	Seq     uint64    // its sequence in that stream
	Time    time.Time // when that stream stored it
}

// HeaderValue is one received header value, kept exactly. Value holds the
// text, or its base64 when Encoding is "base64" (the value was not valid
// UTF-8 or held NUL, which PostgreSQL text cannot store).
type HeaderValue struct {
	Name         string `json:"name"`
	NameEncoding string `json:"name_encoding,omitempty"`
	Value        string `json:"value"`
	Encoding     string `json:"encoding,omitempty"`
}

// Record is a dead letter ready to store: every field of the header
// contract, the raw headers and payload, and where it came from.
type Record struct {
	Tenant          string
	ItemType        string
	Subject         string
	OriginalSubject string
	MsgID           string
	MsgIDDerived    bool
	OperationID     string
	CorrelationID   string
	Principal       string
	Consumer        string
	Error           string
	ErrorClass      ErrorClass
	Stack           string
	Attempts        *int32
	FirstFailedAt   *time.Time
	LastFailedAt    *time.Time
	DeadLetteredAt  time.Time

	Headers            []HeaderValue
	Payload            []byte
	PayloadSHA256      [32]byte
	PayloadUnavailable bool

	Fingerprint      string
	MalformedReasons []string

	SourceKind     string
	SourceStream   string
	SourceSeq      uint64
	SourceConsumer string
	Advisory       []byte // JSON of the advisory, for advisory rows
}

// Malformed reports whether anything received broke the contract.
func (r *Record) Malformed() bool { return len(r.MalformedReasons) > 0 }

func (r *Record) flag(format string, args ...any) {
	r.MalformedReasons = append(r.MalformedReasons, fmt.Sprintf(format, args...))
}

// ParseDLQ turns a message from the DLQ stream into a Record. It never fails:
// anything missing or broken is recorded in MalformedReasons and everything
// received is kept. prefix is the subject prefix (e.g. "dlq"); tenant and
// item type come from the subject dlq.<tenant>.<item_type...>, and a header
// that disagrees does not move the message (the subject wins).
func ParseDLQ(prefix string, m Received) Record {
	r := Record{
		SourceKind:     SourceDLQ,
		SourceStream:   m.Stream,
		SourceSeq:      m.Seq,
		DeadLetteredAt: m.Time,
	}
	r.Subject = r.text("subject", m.Subject)
	r.Headers = encodeHeaders(m.Header)
	r.setPayload(m.Data)

	subjTenant, subjType := splitDLQSubject(prefix, m.Subject)
	hdrTenant := r.header(m.Header, HeaderTenant)
	hdrType := r.header(m.Header, HeaderItemType)
	r.Tenant = r.text("subject tenant", subjTenant)
	if hdrTenant != "" && hdrTenant != r.Tenant {
		r.flag("%s %q disagrees with the subject's tenant %q; the subject wins", HeaderTenant, hdrTenant, r.Tenant)
	}
	switch {
	case subjType != "":
		r.ItemType = r.text("subject item type", subjType)
		if hdrType != "" && hdrType != r.ItemType {
			r.flag("%s %q disagrees with the subject's item type %q; the subject wins", HeaderItemType, hdrType, r.ItemType)
		}
	case hdrType != "":
		r.ItemType = hdrType
		r.flag("subject %q has no item type; taken from %s", r.Subject, HeaderItemType)
	default:
		r.ItemType = "unknown"
		r.flag("subject %q has no item type and %s is missing", r.Subject, HeaderItemType)
	}
	if r.Tenant == "" {
		r.Tenant = "unknown"
		r.flag("subject %q does not start with %q followed by a tenant", r.Subject, prefix+".")
	}

	r.applyContract(m.Header)
	if r.OriginalSubject == "" {
		r.flag("%s is missing: the message cannot be replayed", HeaderOriginalSubject)
	}
	if r.MsgID == "" {
		r.MsgID = fmt.Sprintf("%s:%d", m.Stream, m.Seq)
		r.MsgIDDerived = true
	}
	r.Fingerprint = Fingerprint(r.ErrorClass, r.Error, r.Stack)
	return r
}

// applyContract reads the Dlq-* headers that do not decide the tenant.
func (r *Record) applyContract(h map[string][]string) {
	r.OriginalSubject = r.header(h, HeaderOriginalSubject)
	if r.OriginalSubject != "" {
		if err := ValidatePublishSubject(r.OriginalSubject); err != nil {
			r.flag("%s %q: %v", HeaderOriginalSubject, r.OriginalSubject, err)
		}
	}
	r.MsgID = r.header(h, HeaderOriginalMsgID)
	r.OperationID = r.header(h, HeaderOperationID)
	r.CorrelationID = r.header(h, HeaderCorrelationID)
	r.Principal = r.header(h, HeaderPrincipal)
	r.Consumer = r.header(h, HeaderConsumer)
	r.Error = r.lines(h, HeaderError)
	r.Stack = r.lines(h, HeaderStack)

	r.ErrorClass = ClassUnclassified
	if c := r.header(h, HeaderErrorClass); c != "" {
		if ErrorClass(c).Valid() {
			r.ErrorClass = ErrorClass(c)
		} else {
			r.flag("%s %q is not one of %s", HeaderErrorClass, c, classList())
		}
	}
	if a := r.header(h, HeaderAttempts); a != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(a), 10, 32)
		if err != nil || n < 0 {
			r.flag("%s %q is not a whole number of attempts", HeaderAttempts, a)
		} else {
			v := int32(n)
			r.Attempts = &v
		}
	}
	r.FirstFailedAt = r.timeHeader(h, HeaderFirstFailedAt)
	r.LastFailedAt = r.timeHeader(h, HeaderLastFailedAt)
}

func (r *Record) setPayload(data []byte) {
	if data == nil {
		data = []byte{}
	}
	r.Payload = data
	r.PayloadSHA256 = sha256.Sum256(data)
}

// header returns the first value of a contract header as clean text.
func (r *Record) header(h map[string][]string, name string) string {
	vs := h[name]
	if len(vs) == 0 {
		return ""
	}
	if len(vs) > 1 {
		r.flag("%s sent %d times; the first value is used", name, len(vs))
	}
	return r.text(name, vs[0])
}

// lines returns a multi-line header. NATS header values cannot hold line
// breaks and lose leading white space, so Dlq-Error and Dlq-Stack are sent
// escaped (\n, \r, \t, \\); several values are taken as several lines.
func (r *Record) lines(h map[string][]string, name string) string {
	vs := h[name]
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = r.text(name, UnescapeLines(v))
	}
	return strings.Join(out, "\n")
}

var (
	lineEscaper   = strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\r", "\\r", "\t", "\\t")
	lineUnescaper = strings.NewReplacer("\\\\", "\\", "\\n", "\n", "\\r", "\r", "\\t", "\t")
)

// EscapeLines writes text for a Dlq-Error or Dlq-Stack header value.
func EscapeLines(s string) string { return lineEscaper.Replace(s) }

// UnescapeLines reverses EscapeLines; other backslashes are kept.
func UnescapeLines(s string) string { return lineUnescaper.Replace(s) }

func (r *Record) timeHeader(h map[string][]string, name string) *time.Time {
	v := r.header(h, name)
	if v == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v))
	if err != nil {
		r.flag("%s %q is not an RFC 3339 time", name, v)
		return nil
	}
	t = t.UTC()
	return &t
}

// text makes s storable as PostgreSQL text: invalid UTF-8 and NUL become
// U+FFFD. The exact bytes stay in the raw headers.
func (r *Record) text(what, s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	r.flag("%s is not valid UTF-8 text; shown with replacement characters, kept exactly in the raw headers", what)
	return CleanText(s)
}

// CleanText returns s with invalid UTF-8 sequences and NUL replaced by U+FFFD.
func CleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// encodeHeaders keeps every header value, sorted by name, values in order.
func encodeHeaders(h map[string][]string) []HeaderValue {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]HeaderValue, 0, len(h))
	for _, n := range names {
		name, nameEnc := encodeText(n)
		for _, v := range h[n] {
			value, enc := encodeText(v)
			out = append(out, HeaderValue{Name: name, NameEncoding: nameEnc, Value: value, Encoding: enc})
		}
	}
	return out
}

func encodeText(s string) (string, string) {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s, ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), "base64"
}

// DecodeHeaders turns stored headers back into the exact values received.
func DecodeHeaders(hs []HeaderValue) (map[string][]string, error) {
	out := make(map[string][]string, len(hs))
	for _, h := range hs {
		name, err := decodeText(h.Name, h.NameEncoding)
		if err != nil {
			return nil, fmt.Errorf("header name %q: %w", h.Name, err)
		}
		value, err := decodeText(h.Value, h.Encoding)
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", name, err)
		}
		out[name] = append(out[name], value)
	}
	return out, nil
}

func decodeText(s, enc string) (string, error) {
	switch enc {
	case "":
		return s, nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(s)
		return string(b), err
	default:
		return "", fmt.Errorf("unknown encoding %q", enc)
	}
}

// splitDLQSubject splits <prefix>.<tenant>.<item_type...>.
func splitDLQSubject(prefix, subject string) (tenant, itemType string) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if !ok {
		return "", ""
	}
	tenant, itemType, _ = strings.Cut(rest, ".")
	return tenant, itemType
}

// ValidatePublishSubject reports why s cannot be published to, or nil.
func ValidatePublishSubject(s string) error {
	if s == "" {
		return fmt.Errorf("empty subject")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return fmt.Errorf("subject contains white space")
	}
	for _, tok := range strings.Split(s, ".") {
		switch tok {
		case "":
			return fmt.Errorf("subject has an empty token")
		case "*", ">":
			return fmt.Errorf("subject has a wildcard")
		}
	}
	return nil
}

func classList() string {
	s := make([]string, len(ProducerClasses))
	for i, c := range ProducerClasses {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}
