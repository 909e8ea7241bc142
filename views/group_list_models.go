package views

import "time"

// Models of the error groups page.

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

func groupAction(m GroupListModel) string { return orDefault(m.Action, PathGroups) }

var groupFields = []struct{ Name, Label string }{
	{"tenant", "Tenant"}, {"type", "Item type"}, {"class", "Error class"}, {"state", "Show"}, {"sort", "Sort"},
}

// groupErrorSlots are the groups filter's FieldError slots.
var groupErrorSlots = errorSlots(groupFields)
