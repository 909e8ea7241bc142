package views

import "time"

// Models of the error groups page, and of the group's panel on the list.

// GroupFilter is the groups page filter as typed; each field is the query
// parameter named in its comment.
type GroupFilter struct {
	Tenant     string // tenant
	ItemType   string // type
	ErrorClass string // class
	State      string // state: "unresolved" (default), "all" or "snoozed"
	Sort       string // sort: unresolved, count, recent, new
	Page       string // page: 1 (default), 2, ...
	// After and Before are the position the page's Next or Previous link
	// reads from (dlq.GroupCursor), at most one; Page is then its number.
	After, Before string
}

// GroupListModel is the error groups page.
type GroupListModel struct {
	Action    string
	Filter    GroupFilter
	Tenants   []string
	ItemTypes []string
	// ItemTypesTyped says the item type filter is a text input and
	// ItemTypes its suggestions (too many item types for a select).
	ItemTypesTyped bool
	ErrorClasses   []string
	Sorts          []Option
	States         []Option
	Rows           []GroupRow
	// Total is how many groups match; Rows are those from First (1-based).
	Total int
	First int
	// PrevURL and NextURL lead to the pages before and after; empty when
	// none.
	PrevURL string
	NextURL string
	Errors  map[string]string
	Now     time.Time
	// Actions are what the viewer may do to a whole group.
	Actions GroupActions
	// Snoozed is what the page leaves out as snoozed ("With unresolved").
	Snoozed SnoozedHint
	// PastEnd is set when the page is past the last one: it lists no
	// group, though Total match.
	PastEnd PastEnd
}

// PastEnd is a page of a list past its last page (a link kept from before
// what was on it was resolved, or edited): Page is its number (1-based),
// FirstURL the list's first page. The zero value is a page within the
// list.
type PastEnd struct {
	Page     int
	FirstURL string
}

// SnoozedHint is how many groups a listing leaves out because they are
// snoozed, their unresolved dead letters, and the page that shows them.
// Snoozing hides a group; its dead letters still wait.
type SnoozedHint struct {
	Groups     int64
	Unresolved int64
	URL        string
}

// GroupActions says which group actions the viewer may use somewhere.
type GroupActions struct {
	Replay, Discard, Resolve, Triage bool
	// ReturnTo is the groups page (its filter, sort and page) a row's
	// replay, resolve or discard comes back to: its confirmation's Back
	// and where it ends; "" goes to the group's list of dead letters.
	ReturnTo string
}

// Any reports whether the viewer may do anything to a group.
func (a GroupActions) Any() bool { return a.Replay || a.Discard || a.Resolve || a.Triage }

// GroupRow is one error group.
type GroupRow struct {
	Fingerprint string
	ErrorClass  string
	N           int64
	Unresolved  int64
	FirstSeen   time.Time
	LastSeen    time.Time
	Tenants     []string
	// ItemTypes are the first of the group's item types (by name),
	// ItemTypesMore how many more it has.
	ItemTypes     []string
	ItemTypesMore int64
	SampleError   string
	StackHead     string
	// New says the group was first seen in the last 24 hours.
	New bool
	// Triage is what people recorded about the group, per tenant.
	Triage []GroupTriageView
	// ListURL lists the group's dead letters; SampleURL opens the sample.
	ListURL   string
	SampleURL string
	// ReplayURL, DiscardURL and ResolveURL freeze the group's unresolved
	// dead letters (as the row's filter selects them: in the tenants the
	// row lists where the person may do that) for confirmation (POST);
	// "" when there is no such tenant. TriageURL is the group's list at
	// its triage panel.
	ReplayURL  string
	DiscardURL string
	ResolveURL string
	TriageURL  string
	// NoReplay is why the group is not offered as one replay (nothing of
	// it could go, or its dead letters may only be requested one at a
	// time); empty when it is. Replayable is how many of its dead letters
	// the replay would take that could go (ReplayableMore: at least that
	// many; more were not judged).
	NoReplay       string
	Replayable     int
	ReplayableMore bool
	// ReplayRest is why some of what the replay takes would not go, when
	// some would ("" when all would).
	ReplayRest string
	// OfferURL is where the row's menu fetches its replay offer when it is
	// opened (NoReplay, Replayable: judged then, not with the page).
	OfferURL string
	// Gone says the page's filter lists the group no more, read when its
	// menu was opened (resolved, discarded or snoozed since the page was
	// read): the menu says so, and offers no replay.
	Gone bool
	// Fix records a fix of the group's item type (or the group), when it
	// is of one tenant and item type and the viewer may (nil otherwise).
	Fix *FixForm
}

// GroupTriageView is what people recorded about a group in one tenant.
type GroupTriageView struct {
	Tenant    string
	Owner     string
	Note      string
	TicketURL string
	// TicketRefused is why TicketURL is not a link the console follows
	// (one saved before a rule it breaks), or "": a refused one is shown
	// as text with this note, never as a link.
	TicketRefused string
	// Snoozed says the snooze has not ended: it ends at SnoozedUntil (when
	// not zero) or when SnoozeLeft more dead letters arrived (when not 0).
	Snoozed      bool
	SnoozedUntil time.Time
	SnoozeLeft   int64
	// UpdatedBy and UpdatedAt are the last change.
	UpdatedBy string
	UpdatedAt time.Time
}

// Empty reports whether nothing is recorded worth showing.
func (v GroupTriageView) Empty() bool {
	return v.Owner == "" && v.Note == "" && v.TicketURL == "" && !v.Snoozed
}

// GroupPanelModel is the error group's panel above its list: per tenant of
// the group, what was recorded and (for those who may triage) the one
// form to assign, note, snooze and wake it.
type GroupPanelModel struct {
	Fingerprint string
	Tenants     []GroupTenantPanel
	// ReturnTo is the list to come back to after a change.
	ReturnTo string
}

// GroupTenantPanel is the group in one tenant. SnoozeOptions are the
// form's snooze choices, the first ("leave as it is") chosen.
type GroupTenantPanel struct {
	Triage        GroupTriageView
	CanTriage     bool
	SnoozeOptions []Option
}

// typesTitle is the title of a group's item types: those named, and how
// many more it has.
func typesTitle(g GroupRow) string {
	if g.ItemTypesMore == 0 {
		return joinList(g.ItemTypes)
	}
	return joinList(g.ItemTypes) + " and " + Count(g.ItemTypesMore) + " more"
}

func groupAction(m GroupListModel) string { return orDefault(m.Action, PathGroups) }

var groupFields = []struct{ Name, Label string }{
	{"tenant", "Tenant"}, {"type", "Item type"}, {"class", "Error class"}, {"state", "Show"}, {"sort", "Sort"}, {"page", "Page"},
}

// groupErrorSlots are the groups filter's FieldError slots.
var groupErrorSlots = errorSlots(groupFields)

// Paths of the group triage forms (POST): PathGroupTriage is the panel's
// one form (owner, note, ticket and snooze at once); the others change one
// part each.
const (
	PathGroupTriage = "/groups/triage"
	// PathGroupOffer is a row's replay offer (GET, GroupRow.OfferURL).
	PathGroupOffer  = "/groups/offer"
	PathGroupSnooze = "/groups/snooze"
	PathGroupWake   = "/groups/wake"
	PathGroupOwner  = "/groups/owner"
	PathGroupNote   = "/groups/note"
)

// groupReplayLabel is the group's replay item: how many of its dead
// letters could go ("Replay 6 that can go…"; "200+" when more were not
// judged).
func groupReplayLabel(g GroupRow) string {
	n := Count(int64(g.Replayable))
	if g.ReplayableMore {
		n += "+"
	}
	return "Replay " + n + " that can go…"
}
