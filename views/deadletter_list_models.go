package views

import (
	"net/url"
	"time"

	"github.com/a-h/templ"
)

// Models of the quarantine list: the filter as typed, the page of rows,
// the count fetched after it.

// DeadLetterFilter is the quarantine list filter as the user typed it;
// each field is the query parameter named in its comment.
type DeadLetterFilter struct {
	Q      string // q: text in the error message
	Tenant string // tenant
	// Tenants are the tenant values when several were sent (Tenant is
	// then empty): the scope narrowed to them, as a group row's list and
	// actions name the tenants the row counts.
	Tenants       []string
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
	Tenants   []string
	ItemTypes []string
	// ItemTypesTyped says the item type filter is a text input and
	// ItemTypes its suggestions (too many item types for a select).
	ItemTypesTyped bool
	ErrorClasses   []string
	Statuses       []Option
	// Presets are the one-click time ranges.
	Presets []TimePreset
	// GroupLabel describes Filter.Group (its sample error), when set.
	GroupLabel string
	// ClearGroupURL is this view without the group filter.
	ClearGroupURL string
	// AnyTenantURL is this view in any tenant: the Tenant control's way
	// back from several tenants (Filter.Tenants), which no select shows.
	AnyTenantURL string
	// GroupPanel, when not nil, is the group's triage (Filter.Group set).
	GroupPanel *GroupPanelModel
	Rows       []DeadLetterRow
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
	// Unfiltered says nothing but a tenant narrows the list (no status,
	// time, text or page): an empty list then means none has arrived.
	Unfiltered bool
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
	// FilterQuery is the filter counted, as BulkActionsModel.FilterQuery
	// says it (MatchingIDFor).
	FilterQuery string
	// Failed says the filter was not valid: no count.
	Failed bool
	// Problems are what is wrong with the filter when Failed, shown as
	// text.
	Problems []string
	// Fragment says it answers the list's request for its count: the
	// "All matching" actions' count is swapped in too.
	Fragment bool
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
	// Generation counts the replays of its message that came back as dead
	// letters before it (0: a first failure).
	Generation int32
}

func deadLetterAction(m DeadLetterListModel) string { return orDefault(m.Action, PathDeadLetters) }

// filterClearURL is where the filter's Clear leads: the list without its
// filters; on an error group's page, that group's list (the group's own
// Remove leaves the group).
func filterClearURL(m DeadLetterListModel) string {
	if m.Filter.Group == "" {
		return deadLetterAction(m)
	}
	return deadLetterAction(m) + "?" + url.Values{"group": {m.Filter.Group}}.Encode()
}

// deadLetterFields are the list filter parameters in form order, with
// their labels.
var deadLetterFields = []struct{ Name, Label string }{
	{"q", "Error text"}, {"tenant", "Tenant"}, {"type", "Item type"}, {"class", "Error class"},
	{"status", "Status"}, {"subject", "Subject prefix"}, {"from", "From"}, {"to", "To"},
	{"msg_id", "Message id"}, {"op_id", "Operation id"}, {"corr_id", "Correlation id"}, {"group", "Group"},
	{"page", "Page"},
}

// deadLetterErrorSlots are the list filter's FieldError slots.
var deadLetterErrorSlots = errorSlots(deadLetterFields)

// moreFilters reports whether the list's secondary filters are in use, so
// their section starts open.
func moreFilters(m DeadLetterListModel) bool {
	f := m.Filter
	return f.From != "" || f.To != "" || f.Subject != "" || f.MsgID != "" || f.OperationID != "" || f.CorrelationID != "" ||
		m.Errors["from"] != "" || m.Errors["to"] != ""
}

// noneArrived is the empty list's title when no filter but the tenants
// narrows it (f.Tenant, or f.Tenants, or every tenant of the reader's when
// neither), the tenants written as they read (Shown).
func noneArrived(f DeadLetterFilter) string {
	tenants := f.Tenants
	if f.Tenant != "" {
		tenants = []string{f.Tenant}
	}
	if len(tenants) == 0 {
		return "No dead letters have arrived in your tenants yet"
	}
	return "No dead letters have arrived for " + Shown(joinList(tenants)) + " yet"
}
