package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/views"
)

var (
	groupSorts = []views.Option{
		{Value: string(dlq.GroupsByUnresolved), Label: "Most unresolved"}, {Value: string(dlq.GroupsByCount), Label: "Most dead letters"},
		{Value: string(dlq.GroupsByLastSeen), Label: "Seen most recently"}, {Value: string(dlq.GroupsByFirstSeen), Label: "Newest groups"},
	}
	groupStates = []views.Option{{Value: "unresolved", Label: "With unresolved"}, {Value: "all", Label: "All groups"},
		{Value: "snoozed", Label: "Snoozed"}}
)

// newGroupAge is how recently a group was first seen to be marked new.
const newGroupAge = 24 * time.Hour

// groupFilterParams are the groups page's filter parameters: what its rows,
// and so their actions, are selected by. groupPageParams are the page's
// own, which select nothing; a row's replay offer (groupOffer) has the
// group instead.
var (
	groupFilterParams = []string{"tenant", "type", "class", "state"}
	groupPageParams   = []string{"sort", "page", "after", "before"}
)

// readGroupFilter reads the groups page's filter from q, and the messages
// of what was read, by field: text that cannot be stored (formText), and
// under "" the parameters that are none of groupFilterParams nor own (the
// page's or the offer's own parameters: unknownParams), or any of them
// given twice (repeatedParams), which refuse the filter rather than widen
// it to every group.
func readGroupFilter(q url.Values, own []string) (views.GroupFilter, map[string]string) {
	t := readText(q)
	get := t.get
	f := views.GroupFilter{Tenant: get("tenant"), ItemType: get("type"), ErrorClass: get("class"), State: get("state"), Sort: get("sort"),
		Page: get("page"), After: get("after"), Before: get("before")}
	if f.State == "" {
		f.State = "unresolved"
	}
	if f.Sort == "" {
		f.Sort = string(dlq.GroupsByUnresolved)
	}
	errs := t.Errors()
	names := slices.Concat(groupFilterParams, own)
	if unknown := unknownParams(q, names); unknown != nil {
		errs = addTextErrors(errs, map[string]string{"": unknownFilterText("The groups page", unknown, groupFilterParams) +
			" No group was listed: without it, the groups and their actions would cover more than was asked."})
	} else if repeated := repeatedParams(q, names); repeated != nil {
		errs = addTextErrors(errs, map[string]string{"": repeatedFilterText(repeated,
			"No group was listed: with one of the values, the groups and their actions would not be the ones asked.")})
	}
	return f, errs
}

// validateGroupFilter turns the form into a dlq.GroupFilter over tenants,
// with a message per bad field. "With unresolved" leaves snoozed groups
// out; "Snoozed" shows only them; "All groups" shows everything.
func validateGroupFilter(f views.GroupFilter, tenants []string) (dlq.GroupFilter, map[string]string) {
	errs := map[string]string{}
	out := dlq.GroupFilter{Tenants: tenants, Tenant: f.Tenant, ItemType: f.ItemType, ErrorClass: dlq.ErrorClass(f.ErrorClass),
		Unresolved: f.State == "unresolved", Sort: dlq.GroupSort(f.Sort)}
	switch f.State {
	case "all":
		out.Snoozed = dlq.SnoozedToo
	case "snoozed":
		out.Snoozed = dlq.SnoozedOnly
	}
	if f.Tenant != "" && !slices.Contains(tenants, f.Tenant) {
		errs["tenant"] = "Choose one of your tenants."
	}
	if f.ErrorClass != "" && !slices.Contains(errorClasses, out.ErrorClass) {
		errs["class"] = "Choose one of the error classes."
	}
	if !hasChoice(groupStates, f.State) {
		errs["state"] = "Show groups with unresolved dead letters, all, or the snoozed ones."
	}
	if !hasChoice(groupSorts, f.Sort) {
		errs["sort"] = "Choose one of the orders."
	}
	page := 1
	if f.Page != "" {
		var err error
		page, err = strconv.Atoi(f.Page)
		if err != nil || page < 1 || page > 10_000 {
			errs["page"] = "The page link is broken; start from the first page."
		}
	}
	// A page the list linked to reads from the position of the group it
	// was linked from (Next: the last shown; Previous: the first), so
	// that groups dealt with meanwhile do not shift others past it; a
	// number alone (a link typed or kept) is read by offset.
	if f.After != "" && f.Before != "" {
		errs["page"] = "The page link is broken; start from the first page."
	}
	for _, p := range []struct {
		raw string
		to  **dlq.GroupCursor
	}{{f.After, &out.After}, {f.Before, &out.Before}} {
		if p.raw == "" {
			continue
		}
		c, err := dlq.DecodeGroupCursor(p.raw)
		if err != nil {
			errs["page"] = "The page link is broken; start from the first page."
		}
		*p.to = &c
	}
	if out.After == nil && out.Before == nil {
		out.Offset = max(page-1, 0) * dlq.DefaultGroupLimit
	}
	if len(errs) == 0 {
		return out, nil
	}
	return out, errs
}

// groupList is the error groups page: a page of groups with what people
// recorded about each and, for those who may act, each group's actions.
func (s *Server) groupList(c echo.Context) error {
	ctx := c.Request().Context()
	u := userOf(c)
	tenants := s.deadLetterTenants(ctx, u, authz.ActRead)
	q := c.QueryParams()
	form, text := readGroupFilter(q, groupPageParams)
	f, errs := validateGroupFilter(form, tenants)
	errs = addTextErrors(errs, text)
	now := authz.Now(ctx)
	m := views.GroupListModel{
		Action: views.PathGroups, Filter: form, Errors: errs, Now: now, Tenants: tenants,
		ErrorClasses: classStrings(errorClasses), Sorts: groupSorts, States: groupStates, Actions: s.groupActions(u),
	}
	m.Actions.ReturnTo = groupsReturn(c.Request().URL.RequestURI())
	m.ItemTypes, m.ItemTypesTyped = s.itemTypes(ctx, tenants)
	if errs != nil {
		return s.render(c, http.StatusUnprocessableEntity, views.GroupList(s.page(c, "Error groups", "groups"), m))
	}
	page, err := s.deps.DeadLetters.Groups(ctx, f)
	if err != nil {
		return err
	}
	if f.Before != nil && len(page.Groups) == 0 && page.Total > 0 {
		// A Previous link whose groups were all dealt with meanwhile:
		// nothing is before it now, and the first page is what it leads to.
		f.Before, f.Offset = nil, 0
		if page, err = s.deps.DeadLetters.Groups(ctx, f); err != nil {
			return err
		}
	}
	m.Total, m.First = page.Total, page.First
	status := ""
	if f.Unresolved {
		status = views.StatusUnresolved
	}
	fps := make([]string, len(page.Groups))
	for i, g := range page.Groups {
		fps[i] = g.Fingerprint
	}
	triage, err := s.deps.DeadLetters.GroupTriage(ctx, tenants, fps)
	if err != nil {
		return err
	}
	acts := s.rowTenantsOf(ctx, u, tenants)
	console := s.consoleHosts(c.Request())
	for _, g := range page.Groups {
		row, _ := groupRowOf(form, g, status, acts)
		row.New = now.Sub(g.FirstSeen) < newGroupAge
		for _, t := range triage {
			if t.Fingerprint == g.Fingerprint && slices.Contains(g.Tenants, t.Tenant) {
				row.Triage = append(row.Triage, triageView(t, console))
			}
		}
		row.Fix = s.groupFix(c, g)
		// The replay offer is judged when the row's menu is opened
		// (groupOffer): judging every shown group's candidates here cost
		// seconds a page at a million dead letters (bench-ui).
		row.OfferURL = views.PathGroupOffer + pairsQuery("group", g.Fingerprint, "tenant", form.Tenant, "type", form.ItemType,
			"class", form.ErrorClass, "state", form.State)
		m.Rows = append(m.Rows, row)
	}
	snoozed := without(q, "page", "after", "before", "state")
	snoozed.Set("state", "snoozed")
	m.Snoozed = snoozedHint(page.Snoozed, views.PathGroups+encodeQuery(snoozed))
	m.PrevURL, m.NextURL = groupPagerURLs(q, page)
	if len(page.Groups) == 0 && page.Total > 0 {
		// Past the last page (a link kept from before its groups were
		// resolved): the count stands, and the page says where they are.
		n, _ := strconv.Atoi(form.Page)
		m.PastEnd = views.PastEnd{Page: max(n, 1), FirstURL: groupPageURL(q, 1, "", nil)}
		m.PrevURL = groupPageURL(q, (page.Total+dlq.DefaultGroupLimit-1)/dlq.DefaultGroupLimit, "", nil)
	}
	return s.render(c, http.StatusOK, views.GroupList(s.page(c, "Error groups", "groups"), m))
}

// rowTenants are the tenants where the person may take each of a group
// row's actions.
type rowTenants struct{ replay, discard, resolve []string }

// rowTenantsOf are the tenants of tenants (read tenants) where u may take
// each of a group row's actions.
func (s *Server) rowTenantsOf(ctx context.Context, u authz.User, tenants []string) rowTenants {
	return rowTenants{replay: s.requestTenants(ctx, u, tenants), discard: s.deadLetterTenants(ctx, u, authz.ActDiscard),
		resolve: s.deadLetterTenants(ctx, u, authz.ActResolve)}
}

// groupRowOf is g's row under the page's filter form, with the links its
// list and actions select by: a row's actions take its dead letters in the
// tenants the row lists (g.Tenants: not those where it is snoozed, on a
// page that leaves snoozed groups out), of the form's item type, offered
// when the person may take that action in one of them at least (acts).
// Each action's link names all of the row's tenants, so that its
// confirmation (closeFilter, replayFilter) names what of the row it
// leaves out, in a tenant where the person may not act, as "all matching"
// does. The scope its replay offer judges is what that replay could take:
// the row's tenants where the person may request replays.
func groupRowOf(form views.GroupFilter, g dlq.Group, status string, acts rowTenants) (views.GroupRow, replay.GroupScope) {
	row := groupRow(g, status)
	scope := replay.GroupScope{Fingerprint: g.Fingerprint, Tenants: intersect(g.Tenants, acts.replay)}
	row.ListURL = groupListURL(g, form.ItemType, status)
	row.ReplayURL = groupActionURL("/replay/filter", g, acts.replay, form.ItemType)
	row.DiscardURL = groupActionURL("/deadletters/discard/filter", g, acts.discard, form.ItemType)
	row.ResolveURL = groupActionURL("/deadletters/resolve/filter", g, acts.resolve, form.ItemType)
	row.TriageURL = groupListURL(g, "", views.StatusUnresolved) + "#group-triage"
	return row, scope
}

// groupOffer is a groups page row's replay offer (GroupRow.OfferURL: the
// page's filter and the group): the row read again under that filter and
// what of it its replay link would take that could go now, judged as a
// draft judges (the menu's replay item, views.GroupReplayOffer). A group
// the filter no longer lists is said to be gone (groupOfferGone); one of
// none of the person's tenants is not found.
func (s *Server) groupOffer(c echo.Context) error {
	ctx := c.Request().Context()
	u := userOf(c)
	tenants := s.deadLetterTenants(ctx, u, authz.ActRead)
	q := c.QueryParams()
	form, text := readGroupFilter(q, []string{"group"})
	f, errs := validateGroupFilter(form, tenants)
	errs = addTextErrors(errs, text)
	fp := q.Get("group") // the pattern lets no text through that PostgreSQL could refuse
	if errs != nil || !fingerprintPattern.MatchString(fp) {
		return s.render(c, http.StatusUnprocessableEntity, views.GroupReplayOffer(views.GroupRow{}, s.groupActions(u), true))
	}
	f.Fingerprint, f.Offset, f.Limit = fp, 0, 1
	page, err := s.deps.DeadLetters.Groups(ctx, f)
	if err != nil {
		return err
	}
	if len(page.Groups) == 0 {
		return s.groupOfferGone(c, tenants, fp)
	}
	g := page.Groups[0]
	status := ""
	if f.Unresolved {
		status = views.StatusUnresolved
	}
	row, scope := groupRowOf(form, g, status, s.rowTenantsOf(ctx, u, tenants))
	offers, err := s.groupOffers(c, []replay.GroupScope{scope}, form.ItemType)
	if err != nil {
		return err
	}
	o := offers[g.Fingerprint]
	row.Replayable, row.ReplayableMore = o.Go, o.More
	row.NoReplay = noGroupReplay(g, o)
	if o.Go > 0 {
		row.ReplayRest = o.Refused
	}
	actions := s.groupActions(u)
	// The page the menu is on (htmx names it), for the replay to come
	// back to, as the page's own forms do.
	if here, err := url.Parse(c.Request().Header.Get("HX-Current-URL")); err == nil {
		actions.ReturnTo = groupsReturn(here.RequestURI())
	}
	return s.render(c, http.StatusOK, views.GroupReplayOffer(row, actions, false))
}

// groupsReturn is p when it is the groups page (with its filter, sort and
// page), for a group action to come back to; else "".
func groupsReturn(p string) string {
	r, u, ok := localReturn(p)
	if !ok || u.Path != views.PathGroups {
		return ""
	}
	return r
}

// actionReturn is where a list action by filter comes back to: the groups
// page its form names (return_to), else the list of what it selects.
func actionReturn(c echo.Context) string {
	if r := groupsReturn(c.FormValue("return_to")); r != "" {
		return r
	}
	return views.PathDeadLetters + encodeQuery(listFilter(c.QueryParams()))
}

// groupOfferGone answers the offer of group fp that the page's filter no
// longer lists (resolved, discarded or snoozed since the page was read):
// the menu says so, to reload (200: the menu shows no error of the
// server). A group of none of the person's tenants (read tenants), snoozed
// or not, is not found, as one of no tenant is.
func (s *Server) groupOfferGone(c echo.Context, tenants []string, fp string) error {
	page, err := s.deps.DeadLetters.Groups(c.Request().Context(), dlq.GroupFilter{Tenants: tenants, Fingerprint: fp,
		Snoozed: dlq.SnoozedToo, Limit: 1})
	if err != nil {
		return err
	}
	if len(page.Groups) == 0 {
		return echo.ErrNotFound
	}
	return s.render(c, http.StatusOK, views.GroupReplayOffer(views.GroupRow{Fingerprint: fp, Gone: true}, s.groupActions(userOf(c)), false))
}

// intersect is the tenants of a that are in b, in a's order.
func intersect(a, b []string) []string {
	var out []string
	for _, t := range a {
		if slices.Contains(b, t) {
			out = append(out, t)
		}
	}
	return out
}

// groupListURL is the list of what a row of group g counts: of its
// tenants only (g.Tenants: a listing that leaves snoozed groups out counts
// none of a tenant where it is snoozed, and the list must not show, nor
// its bulk actions take, what the row does not count), of item type
// (empty: any) and status (empty: any).
func groupListURL(g dlq.Group, itemType, status string) string {
	return groupURL(views.PathDeadLetters, g.Fingerprint, g.Tenants, itemType, status)
}

// groupActionURL is path (an action by filter) over the unresolved dead
// letters of group g in its tenants (g.Tenants, each a tenant value: the
// filter reads several as a narrower scope) of itemType ("": any); ""
// when none of them is in may (the tenants where the person may take that
// action): the row has nothing the person may do that to.
func groupActionURL(path string, g dlq.Group, may []string, itemType string) string {
	if len(intersect(g.Tenants, may)) == 0 {
		return ""
	}
	return groupURL(path, g.Fingerprint, g.Tenants, itemType, views.StatusUnresolved)
}

// groupURL is path filtered to group fp in tenants, of itemType and
// status (each left out when empty).
func groupURL(path, fp string, tenants []string, itemType, status string) string {
	q := url.Values{"group": {fp}, "tenant": tenants}
	if itemType != "" {
		q.Set("type", itemType)
	}
	if status != "" {
		q.Set("status", status)
	}
	return path + encodeQuery(q)
}

// noGroupReplay is why g is not offered as one replay, o being what of
// it could go (GroupOffers, which judges as the draft does, bulk rules
// included): nothing could, or only fewer at once; "" when some of it
// could go, or nothing of it
// is unresolved (there is nothing to replay, and nothing to explain).
func noGroupReplay(g dlq.Group, o replay.GroupOffer) string {
	switch {
	case g.Unresolved == 0 || o.Go > 0:
		return ""
	case o.More && o.Refused != "":
		return fmt.Sprintf("none of the newest %d of it in each tenant could go (older ones were not judged): %s", replay.GroupOfferLimit, o.Refused)
	case o.Together:
		return o.Refused // they could go, not together: the rule says how
	case o.Refused != "":
		return "nothing of it could go: " + o.Refused
	}
	return "nothing of it waits for a replay you may request: every unresolved dead letter of it is in a replay request already, " +
		"or in a tenant where you may not request replays"
}

// groupOffers are what a replay of each group of groups could take now
// (replay.Service.GroupOffers), of itemType ("": any), in each group's
// tenants; none for someone who may request no replay.
func (s *Server) groupOffers(c echo.Context, groups []replay.GroupScope, itemType string) (map[string]replay.GroupOffer, error) {
	u := userOf(c)
	if !PermittedSomewhere(s.deps.Access, u, Permission{Object: replayObjects, Action: authz.ActRequest}) {
		return nil, nil
	}
	can := func(tenant string, class replaypolicy.Class) bool {
		return s.deps.Access.Can(u, tenant, authz.ReplayObject(string(class)), authz.ActRequest)
	}
	return s.deps.Replays.GroupOffers(c.Request().Context(), groups, itemType, can)
}

// requestTenants are the tenants of tenants (read tenants) where u may
// request replays of some class: what a replay by filter selects in.
func (s *Server) requestTenants(ctx context.Context, u authz.User, tenants []string) []string {
	sc := s.replayScope(ctx, u, authz.ActRequest)
	if sc.All {
		return tenants
	}
	return intersect(tenants, sc.Tenants)
}

// groupActions are the group actions u may use in some tenant.
func (s *Server) groupActions(u authz.User) views.GroupActions {
	can := func(act string) bool { return s.deps.Access.CanSomewhere(u, authz.ObjDeadLetter, act, nil) }
	return views.GroupActions{
		Replay:  PermittedSomewhere(s.deps.Access, u, Permission{Object: replayObjects, Action: authz.ActRequest}),
		Discard: can(authz.ActDiscard), Resolve: can(authz.ActResolve), Triage: can(authz.ActTriage),
	}
}

// groupPagerURLs are the links to the pages before and after page, each
// read from the position of the group it follows on from (the first shown,
// the last), numbered by the groups' places in the order; "" where there
// is none.
func groupPagerURLs(q url.Values, page dlq.GroupPage) (prev, next string) {
	if len(page.Groups) == 0 {
		return "", ""
	}
	first, last := page.First, page.First+len(page.Groups)-1
	if first > 1 {
		c := page.Groups[0].Cursor()
		prev = groupPageURL(q, (first-2)/dlq.DefaultGroupLimit+1, "before", &c)
	}
	if last < page.Total {
		c := page.Groups[len(page.Groups)-1].Cursor()
		next = groupPageURL(q, last/dlq.DefaultGroupLimit+1, "after", &c)
	}
	return prev, next
}

// groupPageURL is the groups page of q's filter numbered n (1: the first,
// which has no number), read from c by key ("after" or "before"), or,
// without c, by its number.
func groupPageURL(q url.Values, n int, key string, c *dlq.GroupCursor) string {
	out := without(q, "page", "after", "before")
	if n > 1 {
		out.Set("page", strconv.Itoa(n))
	}
	if c != nil {
		out.Set(key, c.Encode())
	}
	return views.PathGroups + encodeQuery(out)
}

// snoozedHint is what a listing leaves out as snoozed, linked to url (the
// snoozed groups of the same filter).
func snoozedHint(n dlq.SnoozedGroups, url string) views.SnoozedHint {
	return views.SnoozedHint{Groups: n.Groups, Unresolved: n.Unresolved, URL: url}
}

func groupRow(g dlq.Group, status string) views.GroupRow {
	r := views.GroupRow{
		Fingerprint: g.Fingerprint, ErrorClass: string(g.ErrorClass), N: g.N, Unresolved: g.Unresolved,
		FirstSeen: g.FirstSeen, LastSeen: g.LastSeen, Tenants: g.Tenants, ItemTypes: g.ItemTypes,
		ItemTypesMore: g.ItemTypeCount - int64(len(g.ItemTypes)),
		SampleError:   g.SampleError, StackHead: g.StackHead, ListURL: groupListURL(g, "", status),
	}
	if g.SampleError != "" {
		r.SampleURL = deadLetterURL(g.SampleID)
	}
	return r
}

// triageView is what was recorded about a group in a tenant, as pages
// show it. Its ticket link is judged again (ticketProblem, against
// console, the console's own hosts): one saved before a rule it breaks is
// shown, not linked.
func triageView(t dlq.GroupTriage, console []string) views.GroupTriageView {
	v := views.GroupTriageView{Tenant: t.Tenant, Owner: t.Owner, Note: t.Note, TicketURL: t.TicketURL, Snoozed: t.Snoozed,
		UpdatedBy: t.UpdatedBy, UpdatedAt: t.UpdatedAt}
	if t.TicketURL != "" {
		v.TicketRefused = ticketProblem(t.TicketURL, console)
	}
	if t.Snoozed {
		v.SnoozedUntil = t.SnoozedUntil
		if t.SnoozeGrowBy > 0 {
			v.SnoozeLeft = max(t.SnoozeBase+t.SnoozeGrowBy-t.Arrived, 1)
		}
	}
	return v
}
