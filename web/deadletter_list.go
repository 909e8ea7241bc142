package web

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

// deadLetterFilterForm is the quarantine list filter as typed in the URL.
type deadLetterFilterForm struct {
	views.DeadLetterFilter
	Before, After string
	Now           time.Time         // what relative times count from
	text          map[string]string // text that cannot be stored, by field (formText)
	// Unknown are the URL's parameters that are neither a filter's nor
	// the list page's own (unknownParams): the list, its count and every
	// action by filter refuse them.
	Unknown []string
	// Repeated are the list's parameters the URL gives more than once
	// (repeatedParams), tenant aside (several are a narrower scope): the
	// list, its count and every action by filter refuse them too.
	Repeated []string
}

// deadLetterFilterParams are the query parameters of the dead letter list's
// filter, each with the field of the form it fills (surrounding spaces
// dropped): the one list the list, its count and the actions by filter
// read (readDeadLetterFilter, bulkFilter).
var deadLetterFilterParams = []struct {
	name  string
	field func(*views.DeadLetterFilter) *string
}{
	{"q", func(f *views.DeadLetterFilter) *string { return &f.Q }},
	{"tenant", func(f *views.DeadLetterFilter) *string { return &f.Tenant }},
	{"type", func(f *views.DeadLetterFilter) *string { return &f.ItemType }},
	{"class", func(f *views.DeadLetterFilter) *string { return &f.ErrorClass }},
	{"status", func(f *views.DeadLetterFilter) *string { return &f.Status }},
	{"subject", func(f *views.DeadLetterFilter) *string { return &f.Subject }},
	{"from", func(f *views.DeadLetterFilter) *string { return &f.From }},
	{"to", func(f *views.DeadLetterFilter) *string { return &f.To }},
	{"group", func(f *views.DeadLetterFilter) *string { return &f.Group }},
	{"msg_id", func(f *views.DeadLetterFilter) *string { return &f.MsgID }},
	{"op_id", func(f *views.DeadLetterFilter) *string { return &f.OperationID }},
	{"corr_id", func(f *views.DeadLetterFilter) *string { return &f.CorrelationID }},
}

// deadLetterPageParams are the list page's own parameters, which select
// nothing: the pager's cursors and "count them" (a poll's mark aside,
// unknownParams).
var deadLetterPageParams = []string{"before", "after", "count"}

// deadLetterFilterNames are the names of deadLetterFilterParams.
func deadLetterFilterNames() []string {
	out := make([]string, 0, len(deadLetterFilterParams))
	for _, p := range deadLetterFilterParams {
		out = append(out, p.name)
	}
	return out
}

// readDeadLetterFilter reads the list's filter (deadLetterFilterParams) and
// pager cursors from q, and notes the names of any other parameter the page
// does not know (Unknown) and of its own given twice but tenant (Repeated),
// which Validate refuses.
func readDeadLetterFilter(q url.Values, now time.Time) deadLetterFilterForm {
	t := readText(q)
	f := deadLetterFilterForm{Before: t.raw("before"), After: t.raw("after"), Now: now}
	for _, p := range deadLetterFilterParams {
		*p.field(&f.DeadLetterFilter) = t.get(p.name)
	}
	if vs := q["tenant"]; len(vs) > 1 {
		f.Tenant = ""
		for _, v := range vs {
			if v = trimSpace(v); !slices.Contains(f.Tenants, v) { // the list reads each tenant once
				f.Tenants = append(f.Tenants, v)
			}
		}
		if len(f.Tenants) == 1 { // one tenant named twice: the form's select shows it
			f.Tenant, f.Tenants = f.Tenants[0], nil
		}
	}
	f.text = t.Errors()
	names := append(deadLetterFilterNames(), deadLetterPageParams...)
	f.Unknown = unknownParams(q, names)
	f.Repeated = repeatedParams(q, slices.DeleteFunc(names, func(n string) bool { return n == "tenant" }))
	return f
}

// Filtered says whether the form has a filter: a filter parameter with a
// value, or several tenants.
func (f deadLetterFilterForm) Filtered() bool {
	if len(f.Tenants) > 0 {
		return true
	}
	for _, p := range deadLetterFilterParams {
		if *p.field(&f.DeadLetterFilter) != "" {
			return true
		}
	}
	return false
}

// listFilter is q's filter (deadLetterFilterParams with a value), without
// the page's own parameters: what a link to the list's first page, its
// count, or an action by filter carries.
func listFilter(q url.Values) url.Values {
	out := url.Values{}
	for _, p := range deadLetterFilterParams {
		if v := q[p.name]; len(v) > 0 && trimSpace(v[0]) != "" {
			out[p.name] = v
		}
	}
	return out
}

// errorClasses are every class a dead letter can have.
var errorClasses = append(slices.Clone(dlq.ProducerClasses), dlq.ClassMaxDeliveries, dlq.ClassTerminated, dlq.ClassUnclassified)

var fingerprintPattern = regexp.MustCompile(`^[0-9a-f]{8,64}$`)

// Validate turns the form into a dlq.ListFilter over tenants (the caller's
// scope), with a message per bad field.
func (f deadLetterFilterForm) Validate(tenants []string) (dlq.ListFilter, map[string]string) {
	errs := map[string]string{}
	out := dlq.ListFilter{
		Tenants: tenants, Tenant: f.Tenant, ItemType: f.ItemType, ErrorClass: dlq.ErrorClass(f.ErrorClass),
		SubjectPrefix: f.Subject, Fingerprint: f.Group, MsgID: f.MsgID, OperationID: f.OperationID,
		CorrelationID: f.CorrelationID, Text: f.Q, Before: f.Before, After: f.After,
	}
	if f.Q != "" && !dlq.TextSearchable(f.Q) {
		errs["q"] = "Type a word of at least 3 letters or digits to search error messages: shorter words and punctuation alone cannot use the search index."
	}
	if f.Tenant != "" && !slices.Contains(tenants, f.Tenant) {
		errs["tenant"] = "Choose one of your tenants."
	}
	for _, t := range f.Tenants {
		if !slices.Contains(tenants, t) {
			errs["tenant"] = "Choose one of your tenants."
		}
	}
	if len(f.Tenants) > 0 {
		out.Tenants = f.Tenants
	}
	if f.ErrorClass != "" && !slices.Contains(errorClasses, out.ErrorClass) {
		errs["class"] = "Choose one of the error classes."
	}
	switch {
	case f.Status == "":
	case f.Status == views.StatusUnresolved:
		out.Statuses = dlq.UnresolvedStatuses
	case dlq.Status(f.Status).Valid():
		out.Statuses = []dlq.Status{dlq.Status(f.Status)}
	default:
		errs["status"] = "Choose a status, or unresolved."
	}
	if f.Group != "" && !fingerprintPattern.MatchString(f.Group) {
		errs["group"] = "The error group link is broken; open the group again from the groups page."
	}
	out.From, out.To = timeRange(f.From, f.To, f.Now, errs)
	for _, c := range []string{f.Before, f.After} {
		if _, err := dlq.DecodeCursor(c); c != "" && err != nil {
			errs["page"] = "The page link is broken; start from the first page."
		}
	}
	if f.Before != "" && f.After != "" {
		errs["page"] = "The page link is broken; start from the first page."
	}
	switch {
	case len(f.Unknown) > 0:
		errs[""] = unknownFilterText("The dead letter list", f.Unknown, deadLetterFilterNames()) +
			" Nothing was selected: without it, the selection would cover more than was asked."
	case len(f.Repeated) > 0:
		errs[""] = repeatedFilterText(f.Repeated, "Nothing was selected: with one of the values, the selection would not be the one asked.")
	}
	errs = addTextErrors(errs, f.text)
	if len(errs) == 0 {
		return out, nil
	}
	return out, errs
}

// deadLetterList is the quarantine list: parse the filter, validate it
// (422 with messages), list a page in the caller's tenants, render.
func (s *Server) deadLetterList(c echo.Context) error {
	ctx := c.Request().Context()
	u := userOf(c)
	tenants := s.deadLetterTenants(ctx, u, authz.ActRead)
	form := readDeadLetterFilter(c.QueryParams(), authz.Now(ctx))
	f, errs := form.Validate(tenants)
	now := form.Now
	m := views.DeadLetterListModel{
		Action: views.PathDeadLetters, Filter: form.DeadLetterFilter, Errors: errs, Now: now,
		Tenants: tenants, ErrorClasses: classStrings(errorClasses), Statuses: statusOptions(),
		Presets: presetLinks(views.PathDeadLetters, c.QueryParams()),
	}
	m.ItemTypes, m.ItemTypesTyped = s.itemTypes(ctx, tenants)
	q := c.QueryParams()
	if form.Group != "" {
		m.ClearGroupURL = views.PathDeadLetters + encodeQuery(without(q, "group", "before", "after"))
	}
	if len(form.Tenants) > 0 {
		m.AnyTenantURL = views.PathDeadLetters + encodeQuery(without(q, "tenant", "before", "after", "count"))
	}
	// A group's dead letters are the group's page: the navigation says
	// Groups.
	nav, title := "deadletters", "Dead letters"
	if form.Group != "" {
		nav, title = "groups", "Error group"
	}
	if errs != nil {
		return s.render(c, http.StatusUnprocessableEntity, views.DeadLetterList(s.page(c, title, nav), m))
	}
	page, err := s.deps.DeadLetters.ListDeadLetters(ctx, f)
	if err != nil {
		return err
	}
	if form.Group != "" {
		// The panel is of the tenants the list is of: one, several (a
		// group row's list: not those where the group is snoozed, as the
		// row's own triage line), or all the person's.
		scope := f.Tenants
		if form.Tenant != "" {
			scope = []string{form.Tenant}
		}
		if m.GroupPanel, err = s.groupPanel(ctx, u, scope, form.Group, views.PathDeadLetters+encodeQuery(q), s.consoleHosts(c.Request())); err != nil {
			return err
		}
	}
	m.Counted, m.Count, m.CountCapped = page.Counted, page.Count, page.CountCapped
	if !page.Counted && q.Get("count") == "1" {
		if m.Count, m.CountCapped, err = s.deps.DeadLetters.CountDeadLetters(ctx, f); err != nil {
			return err
		}
		m.Counted = true
	}
	if !m.Counted {
		m.CountURL = views.PathDeadLetters + "/count" + encodeQuery(listFilter(q))
		withCount := without(q, "count")
		withCount.Set("count", "1")
		m.CountNowURL = views.PathDeadLetters + encodeQuery(withCount)
	}
	for _, it := range page.Items {
		m.Rows = append(m.Rows, deadLetterRow(it))
		if !m.ItemTypesTyped {
			m.ItemTypes = withChoice(m.ItemTypes, it.ItemType)
		}
	}
	if form.Group != "" && len(page.Items) > 0 {
		m.GroupLabel = page.Items[0].Error
	}
	if page.Next != "" {
		m.NextURL = cursorURL(views.PathDeadLetters, q, "before", page.Next)
	}
	if page.Prev != "" {
		m.PrevURL = cursorURL(views.PathDeadLetters, q, "after", page.Prev)
	}
	m.Unfiltered = len(without(q, "tenant", "count")) == 0
	m.BulkActions = s.bulkActions(c, q, m)
	return s.render(c, http.StatusOK, views.DeadLetterList(s.page(c, title, nav), m))
}

// withChoice is the sorted filter choices with v among them. The choices
// come from the counters snapshot, which can be a moment behind the table:
// a row's item type the snapshot has not yet read is still a choice, so the
// select never lacks a type the page shows (a typed filter takes any).
func withChoice(choices []string, v string) []string {
	i, found := slices.BinarySearch(choices, v)
	if found {
		return choices
	}
	return slices.Insert(slices.Clone(choices), i, v)
}

func deadLetterRow(it dlq.ListItem) views.DeadLetterRow {
	r := views.DeadLetterRow{
		ID: it.ID, URL: deadLetterURL(it.ID), Tenant: it.Tenant, ItemType: it.ItemType, MsgID: it.MsgID,
		Error: it.Error, ErrorClass: string(it.ErrorClass), Status: string(it.Status), Attempts: "—",
		At: it.DeadLetteredAt, PayloadSize: int64(it.PayloadSize), Malformed: it.Malformed, Generation: it.Generation,
	}
	if it.Attempts != nil {
		r.Attempts = strconv.Itoa(int(*it.Attempts))
	}
	return r
}

func classStrings(cs []dlq.ErrorClass) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// without returns q without keys and without empty values.
func without(q url.Values, keys ...string) url.Values {
	out := url.Values{}
	for k, v := range q {
		if !slices.Contains(keys, k) && len(v) > 0 && v[0] != "" {
			out[k] = v
		}
	}
	return out
}

// cursorURL is path with q's filter and one page cursor.
func cursorURL(path string, q url.Values, key, cursor string) string {
	out := without(q, "before", "after")
	out.Set(key, cursor)
	return path + encodeQuery(out)
}
