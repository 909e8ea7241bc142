package web

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/views"
)

var (
	groupSorts = []views.Option{
		{Value: string(dlq.GroupsByUnresolved), Label: "Most unresolved"}, {Value: string(dlq.GroupsByCount), Label: "Most dead letters"},
		{Value: string(dlq.GroupsByLastSeen), Label: "Seen most recently"}, {Value: string(dlq.GroupsByFirstSeen), Label: "Newest groups"},
	}
	groupStates = []views.Option{{Value: "unresolved", Label: "With unresolved"}, {Value: "all", Label: "All groups"}}
)

func readGroupFilter(q url.Values) views.GroupFilter {
	get := func(k string) string { return strings.TrimSpace(q.Get(k)) }
	f := views.GroupFilter{Tenant: get("tenant"), ItemType: get("type"), ErrorClass: get("class"), State: get("state"), Sort: get("sort")}
	if f.State == "" {
		f.State = "unresolved"
	}
	if f.Sort == "" {
		f.Sort = string(dlq.GroupsByUnresolved)
	}
	return f
}

// validateGroupFilter turns the form into a dlq.GroupFilter over tenants,
// with a message per bad field.
func validateGroupFilter(f views.GroupFilter, tenants []string) (dlq.GroupFilter, map[string]string) {
	errs := map[string]string{}
	out := dlq.GroupFilter{Tenants: tenants, Tenant: f.Tenant, ItemType: f.ItemType, ErrorClass: dlq.ErrorClass(f.ErrorClass),
		Unresolved: f.State == "unresolved", Sort: dlq.GroupSort(f.Sort)}
	if f.Tenant != "" && !slices.Contains(tenants, f.Tenant) {
		errs["tenant"] = "Choose one of your tenants."
	}
	if f.ErrorClass != "" && !slices.Contains(errorClasses, out.ErrorClass) {
		errs["class"] = "Choose one of the error classes."
	}
	if !hasChoice(groupStates, f.State) {
		errs["state"] = "Show groups with unresolved dead letters, or all."
	}
	if !hasChoice(groupSorts, f.Sort) {
		errs["sort"] = "Choose one of the orders."
	}
	if len(errs) == 0 {
		return out, nil
	}
	return out, errs
}

// groupList is the error groups page.
func (s *Server) groupList(c echo.Context) error {
	ctx := c.Request().Context()
	tenants := s.deadLetterTenants(ctx, userOf(c), authz.ActRead)
	form := readGroupFilter(c.QueryParams())
	f, errs := validateGroupFilter(form, tenants)
	m := views.GroupListModel{
		Action: views.PathGroups, Filter: form, Errors: errs, Now: time.Now(), Tenants: tenants,
		ErrorClasses: classStrings(errorClasses), Sorts: groupSorts, States: groupStates,
	}
	m.ItemTypes = s.itemTypes(ctx, tenants)
	if errs != nil {
		return s.render(c, http.StatusUnprocessableEntity, views.GroupList(s.page(c, "Error groups", "groups"), m))
	}
	page, err := s.deps.DeadLetters.Groups(ctx, f)
	if err != nil {
		return err
	}
	m.Total = page.Total
	status := ""
	if f.Unresolved {
		status = views.StatusUnresolved
	}
	for _, g := range page.Groups {
		row := groupRow(g, status)
		row.ListURL = listURL("group", g.Fingerprint, "tenant", form.Tenant, "type", form.ItemType, "status", status)
		m.Rows = append(m.Rows, row)
	}
	return s.render(c, http.StatusOK, views.GroupList(s.page(c, "Error groups", "groups"), m))
}

func groupRow(g dlq.Group, status string) views.GroupRow {
	r := views.GroupRow{
		Fingerprint: g.Fingerprint, ErrorClass: string(g.ErrorClass), N: g.N, Unresolved: g.Unresolved,
		FirstSeen: g.FirstSeen, LastSeen: g.LastSeen, Tenants: g.Tenants, ItemTypes: g.ItemTypes,
		SampleError: g.SampleError, StackHead: g.StackHead, ListURL: listURL("group", g.Fingerprint, "status", status),
	}
	if g.SampleError != "" {
		r.SampleURL = deadLetterURL(g.SampleID)
	}
	return r
}
