package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/a-h/templ"
)

// ---- dashboard ----

// DashboardModel is the dashboard: per tenant depth, age and arrivals, the
// arrivals chart, unresolved counts by item type and error class, and the
// biggest error groups.
type DashboardModel struct {
	Now     time.Time
	Tenants []TenantSummaryRow
	// Total sums Tenants (its Tenant is empty; ListURL covers them all).
	Total TenantSummaryRow
	Chart ArrivalChart
	// ByItemType and ByErrorClass are unresolved counts, biggest first.
	ByItemType   []DimensionRow
	ByErrorClass []DimensionRow
	TopGroups    []GroupRow
	// StaleAfter is the age past which the oldest unresolved dead letter is
	// shown red; StaleOptions the choices ("15m", "1h", ...), StaleValue the
	// chosen one.
	StaleAfter   time.Duration
	StaleValue   string
	StaleOptions []Option
	// SpanValue is "24h" or "7d"; SpanURLs link to each span.
	SpanValue string
	SpanURLs  map[string]string
	// Action is the path of the dashboard (the form and the poll target).
	Action string
}

// TenantSummaryRow is one tenant's line on the dashboard.
type TenantSummaryRow struct {
	Tenant     string
	Unresolved int64
	Total      int64
	// Oldest is when the oldest unresolved dead letter arrived (zero: none);
	// Stale says it is older than the dashboard's threshold.
	Oldest   time.Time
	Stale    bool
	LastHour int64
	LastDay  int64
	// ListURL lists the tenant's unresolved dead letters.
	ListURL string
}

// ArrivalChart is the arrivals-per-hour bar chart, drawn as SVG.
type ArrivalChart struct {
	Title string
	Bars  []ChartBar
	// Max is the largest bar; Total the sum.
	Max   int64
	Total int64
}

// ChartBar is one hour of arrivals.
type ChartBar struct {
	Start time.Time
	N     int64
}

// DimensionRow is one item type or error class with its unresolved count.
type DimensionRow struct {
	Value      string
	Unresolved int64
	Total      int64
	// Share is Unresolved relative to the biggest row, 0 to 1.
	Share float64
	// URL lists the dead letters of this value.
	URL string
}

// ---- quarantine list ----

// DeadLetterFilter is the quarantine list filter as the user typed it;
// each field is the query parameter named in its comment.
type DeadLetterFilter struct {
	Q             string // q: text in the error message
	Tenant        string // tenant
	ItemType      string // type
	ErrorClass    string // class
	Status        string // status: a status, or "unresolved"
	Subject       string // subject: original subject prefix
	From          string // from
	To            string // to
	Group         string // group: error fingerprint
	MsgID         string // msg_id
	OperationID   string // op_id
	CorrelationID string // corr_id
}

// StatusUnresolved is the Status filter value for every unresolved status.
const StatusUnresolved = "unresolved"

// DeadLetterListModel is the quarantine list page.
type DeadLetterListModel struct {
	// Action is the path the filter form is sent to (GET).
	Action string
	Filter DeadLetterFilter
	// Choices of the filter selects.
	Tenants      []string
	ItemTypes    []string
	ErrorClasses []string
	Statuses     []Option
	// GroupLabel describes Filter.Group (its sample error), when set.
	GroupLabel string
	// ClearGroupURL is this view without the group filter.
	ClearGroupURL string
	Rows          []DeadLetterRow
	// Count is how many dead letters match, when Counted; CountCapped means
	// more than Count (counting stops at 10,000). When not Counted, the
	// count is fetched from CountURL after the page (htmx), or by following
	// CountNowURL (without JavaScript).
	Counted     bool
	Count       int64
	CountCapped bool
	CountURL    string
	CountNowURL string
	// NextURL leads to older rows and PrevURL to newer ones; empty when none.
	NextURL string
	PrevURL string
	// Errors maps a filter parameter (see DeadLetterFilter) to a message.
	Errors map[string]string
	Now    time.Time
	// BulkActions is rendered in the results toolbar: the bulk action
	// controls for the selected rows. Row checkboxes (name "id", value the
	// dead letter id) belong to the form with id SelectionFormID, which
	// BulkActions must render. Nil renders nothing.
	BulkActions templ.Component
}

// DeadLetterCountModel is the count of the list, fetched after the page.
type DeadLetterCountModel struct {
	Count       int64
	CountCapped bool
	// Failed says the filter was not valid: no count.
	Failed bool
}

// SelectionFormID is the id of the form the list's row checkboxes belong to.
const SelectionFormID = "deadletter-selection"

// DeadLetterRow is one line of the quarantine list.
type DeadLetterRow struct {
	ID          int64
	URL         string
	Tenant      string
	ItemType    string
	MsgID       string
	Error       string
	ErrorClass  string
	Status      string
	Attempts    string
	At          time.Time
	PayloadSize int64
	Malformed   bool
}

// ---- error groups ----

// GroupFilter is the groups page filter as typed; each field is the query
// parameter named in its comment.
type GroupFilter struct {
	Tenant     string // tenant
	ItemType   string // type
	ErrorClass string // class
	State      string // state: "unresolved" (default) or "all"
	Sort       string // sort: unresolved, count, recent, new
}

// GroupListModel is the error groups page.
type GroupListModel struct {
	Action       string
	Filter       GroupFilter
	Tenants      []string
	ItemTypes    []string
	ErrorClasses []string
	Sorts        []Option
	States       []Option
	Rows         []GroupRow
	// Total is how many groups match; Rows may show fewer.
	Total  int
	Errors map[string]string
	Now    time.Time
}

// GroupRow is one error group.
type GroupRow struct {
	Fingerprint string
	ErrorClass  string
	N           int64
	Unresolved  int64
	FirstSeen   time.Time
	LastSeen    time.Time
	Tenants     []string
	ItemTypes   []string
	SampleError string
	StackHead   string
	// ListURL lists the group's dead letters; SampleURL opens the sample.
	ListURL   string
	SampleURL string
}

// ---- message detail ----

// DeadLetterDetailModel is one dead letter in full.
type DeadLetterDetailModel struct {
	ID       int64
	Tenant   string
	ItemType string
	Status   string
	Version  int32

	// PolicyClass is the replay class of the item type and PolicyText what
	// a replay of it needs (replaypolicy.Table.Describe); PolicyRule the
	// item-type glob that matched, empty when none did.
	PolicyClass string
	PolicyText  string
	PolicyRule  string

	Subject         string
	OriginalSubject string
	SourceKind      string
	SourceStream    string
	SourceSeq       int64
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
	Stack          string

	Headers          []HeaderRow
	Malformed        bool
	MalformedReasons []string
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

// HeaderRow is one received header value. Binary values (not valid UTF-8,
// or holding NUL) are shown as base64 with Binary set.
type HeaderRow struct {
	Name   string
	Value  string
	Binary bool
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

// ---- formatting ----

// Count writes n with thousands separators: 1234567 → "1,234,567".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// CappedCount writes a count that stopped at its cap: "10,000+" when
// capped.
func CappedCount(n int64, capped bool) string {
	if capped {
		return Count(n) + "+"
	}
	return Count(n)
}

// Bytes writes a size: "0 B", "812 B", "1.4 KB", "2.0 MB" (1 KB = 1,024 B).
func Bytes(n int64) string {
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1024*1024:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " KB"
	default:
		return strconv.FormatFloat(float64(n)/(1024*1024), 'f', 1, 64) + " MB"
	}
}

// ClassKind maps an error class to a badge kind.
func ClassKind(class string) string {
	switch class {
	case "permanent", "unknown_effect":
		return BadgeDanger
	case "schema_invalid", "policy", "max_deliveries":
		return BadgeWarn
	case "transient":
		return BadgeInfo
	}
	return BadgeNeutral
}

// StatusKind maps a dead letter status to a badge kind.
func StatusKind(status string) string {
	switch status {
	case "quarantined":
		return BadgeWarn
	case "replay_requested", "replaying":
		return BadgeInfo
	case "replayed", "resolved":
		return BadgeOK
	case "replay_failed":
		return BadgeDanger
	}
	return BadgeNeutral
}

// Label turns a snake_case value into words: "replay_failed" → "replay failed".
func Label(v string) string { return strings.ReplaceAll(v, "_", " ") }

// FirstLine returns the first line of s, cut to max runes with an ellipsis.
func FirstLine(s string, max int) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max-1]) + "…"
	}
	return s
}

// ---- chart geometry ----
//
// The bars are an SVG stretched to its box (preserveAspectRatio none), one
// 10-unit slot per hour and 100 units high; the axis labels are HTML around
// it, so that text is never stretched.

type chartRect struct {
	X, Y, W, H string
	Title      string
	Zero       bool
}

func chartViewBox(c ArrivalChart) string { return fmt.Sprintf("0 0 %d 100", max(1, len(c.Bars))*10) }

func chartWidth(c ArrivalChart) string { return strconv.Itoa(max(1, len(c.Bars)) * 10) }

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// chartBars lays out the bars: the tallest reaches 96 units (the top grid
// line), a bar that is not zero is at least 1.5 units tall.
func chartBars(c ArrivalChart) []chartRect {
	out := make([]chartRect, len(c.Bars))
	for i, b := range c.Bars {
		h := 0.0
		if c.Max > 0 {
			h = 96 * float64(b.N) / float64(c.Max)
		}
		if b.N > 0 && h < 1.5 {
			h = 1.5
		}
		out[i] = chartRect{
			X: strconv.Itoa(i*10 + 1), Y: f1(100 - h), W: "8", H: f1(h),
			Title: b.Start.UTC().Format("Jan 2 15:04") + " UTC: " + Count(b.N) + " arrived",
			Zero:  b.N == 0,
		}
	}
	return out
}

// chartXLabels labels six evenly spaced bars (the view lays them out in six
// equal columns): hours for a day, dates for longer spans.
func chartXLabels(c ArrivalChart) []string {
	n := len(c.Bars)
	if n < 6 {
		return nil
	}
	out := make([]string, 0, 6)
	for k := range 6 {
		t := c.Bars[k*n/6].Start.UTC()
		if n > 48 {
			out = append(out, t.Format("Jan 2"))
		} else {
			out = append(out, t.Format("15:04"))
		}
	}
	return out
}

// chartYLabels are the maximum, half of it and zero, top to bottom.
func chartYLabels(c ArrivalChart) []string {
	if c.Max == 0 {
		return []string{"", "", "0"}
	}
	return []string{compact(c.Max), compact(c.Max / 2), "0"}
}

// compact writes 1234 as "1.2k" and 2500000 as "2.5M".
func compact(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 10_000:
		return strconv.FormatInt(n/1000, 10) + "k"
	case n >= 1000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// shareWidth is a DimensionRow's bar width in a 100-unit SVG.
func shareWidth(s float64) string {
	if s <= 0 {
		return "0"
	}
	return f1(max(1.5, min(100, s*100)))
}

func idText(id int64) string { return strconv.FormatInt(id, 10) }

func ageText(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return Age(t, now)
}

func deadLetterAction(m DeadLetterListModel) string { return orDefault(m.Action, PathDeadLetters) }
func groupAction(m GroupListModel) string           { return orDefault(m.Action, PathGroups) }
func dashboardAction(m DashboardModel) string       { return orDefault(m.Action, PathDashboard) }

// deadLetterFields are the list filter parameters in form order, with
// their labels.
var deadLetterFields = []struct{ Name, Label string }{
	{"q", "Error text"}, {"tenant", "Tenant"}, {"type", "Item type"}, {"class", "Error class"},
	{"status", "Status"}, {"subject", "Subject prefix"}, {"from", "From"}, {"to", "To"},
	{"msg_id", "Message id"}, {"op_id", "Operation id"}, {"corr_id", "Correlation id"}, {"group", "Group"},
	{"page", "Page"},
}

var groupFields = []struct{ Name, Label string }{
	{"tenant", "Tenant"}, {"type", "Item type"}, {"class", "Error class"}, {"state", "Show"}, {"sort", "Sort"},
}

// fieldErrors lists errs in the order of fields; other keys last.
func fieldErrors(fields []struct{ Name, Label string }, errs map[string]string) []labelledError {
	var out []labelledError
	known := map[string]bool{}
	for _, f := range fields {
		known[f.Name] = true
		if msg := errs[f.Name]; msg != "" {
			out = append(out, labelledError{f.Label, msg})
		}
	}
	for k, msg := range errs {
		if !known[k] && msg != "" {
			out = append(out, labelledError{orDefault(k, "Filter"), msg})
		}
	}
	return out
}

// errorSlots are the FieldError slots of a filter form, swapped out of band
// with the results (see auditErrorSlots).
func errorSlots(fields []struct{ Name, Label string }) string {
	ids := make([]string, 0, len(fields))
	for _, f := range fields {
		if f.Name != "page" && f.Name != "group" {
			ids = append(ids, "#"+errID(f.Name))
		}
	}
	return strings.Join(ids, ",")
}

var (
	deadLetterErrorSlots = errorSlots(deadLetterFields)
	groupErrorSlots      = errorSlots(groupFields)
)

func countText(n int64, capped bool, one, many string) string {
	if n == 1 && !capped {
		return "1 " + one
	}
	return CappedCount(n, capped) + " " + many
}

func joinList(vs []string) string { return strings.Join(vs, ", ") }

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

// moreFilters reports whether the list's secondary filters are in use, so
// their section starts open.
func moreFilters(m DeadLetterListModel) bool {
	f := m.Filter
	return f.From != "" || f.To != "" || f.Subject != "" || f.MsgID != "" || f.OperationID != "" || f.CorrelationID != "" ||
		m.Errors["from"] != "" || m.Errors["to"] != ""
}

// PolicyText is a class description without its leading "class: ", which
// the page shows as a chip.
func PolicyText(class, describe string) string {
	return strings.TrimPrefix(describe, class+": ")
}
