package views

import "time"

// PathReplays is the replays page.
const PathReplays = "/replay/requests"

// ReplayFilter is the replays page filter as typed: each field is the
// query parameter of its name ("mine": "1"; "order": "" for the viewer's
// own requests first, "newest" for everyone's newest first;
// "requester_issuer" and "requester_subject": one requester's identity,
// set by a requester's link, not typed).
type ReplayFilter struct {
	Status                            string
	Tenant                            string
	Class                             string
	Mine                              bool
	Requester                         string
	RequesterIssuer, RequesterSubject string
	From, To                          string
	Order                             string
	// Reconcile lists only requests with an item waiting for a person to
	// reconcile it ("reconcile=1").
	Reconcile bool
}

// ByIdentity reports whether f lists one requester's requests.
func (f ReplayFilter) ByIdentity() bool { return f.RequesterIssuer != "" || f.RequesterSubject != "" }

// ReplayRow is one request on the replays page.
type ReplayRow struct {
	ID     int64
	URL    string
	Tenant string
	Class  string
	Status string
	// Items are its items as every page counts them (replay.ItemCounts:
	// "0 replayed · 2 to go · 1 blocked"); Total how many it holds.
	Items string
	Total int
	// CameBack is how many of its replayed items came back as new dead
	// letters (the consumer failed on them again).
	CameBack int
	// Waiting is how many of its items need reconciliation: while one
	// does, its badge is amber whatever its status.
	Waiting int
	// Requester names who asked; RequesterURL is the page filtered to
	// their requests: their identity, exactly.
	Requester    string
	RequesterURL string
	Own          bool
	Reason       string
	Edited       bool
	// Submitted is when the requester submitted it (zero for a draft).
	Submitted time.Time
	// Approvals is "k of n" (replay.ApprovalCount); NeedsApproval whether
	// its rules ask for any, ApprovalsNeeded how many (of a draft: what its
	// class asks).
	Approvals       string
	NeedsApproval   bool
	ApprovalsNeeded int
	// Expires is when what it waits for expires (nil: nothing does), and
	// Lapse what does: LapseDraft, LapseApproval or LapseStart; Expired
	// says it is past (a draft not yet voided, an approved request the
	// worker has not blocked yet).
	Expires *time.Time
	Lapse   string
	Expired bool
	// ClosedBy rejected or cancelled it, and ClosedWhy is why.
	ClosedBy, ClosedWhy string
	// Of a void request: Unreplayable, nothing in it could be replayed
	// (every item blocked or skipped); else VoidWhy is why it is void (it
	// expired, the policy changed).
	Unreplayable bool
	VoidWhy      string
}

// What of a request expires (ReplayRow.Lapse): replay.Lapse's values.
const (
	LapseDraft    = "draft"
	LapseApproval = "approval"
	LapseStart    = "start"
)

// lapseText names what of r expires, as the replays page's "Time limit"
// says it: before, "draft expires", "first approval lapses" or "must start
// by"; past, what happened.
func lapseText(r ReplayRow) string {
	texts := map[string][2]string{
		LapseDraft:    {"draft expires", "draft expired"},
		LapseApproval: {"first approval lapses", "first approval lapsed"},
		LapseStart:    {"must start by", "approval expired before it started"},
	}
	t, ok := texts[r.Lapse]
	if !ok {
		t = [2]string{"expires", "expired"}
	}
	if r.Expired {
		return t[1]
	}
	return t[0]
}

// voidTitle is what a void row's "never accepted" and "none asked" say
// when pointed at: unreplayable, when nothing in it could be replayed;
// else why it is void.
func voidTitle(r ReplayRow, unreplayable string) string {
	switch {
	case r.Unreplayable:
		return unreplayable
	case r.VoidWhy != "":
		return "Void: " + r.VoidWhy
	}
	return "Void"
}

// CountChip is one count of the replays page: N of Value (a status or an
// item outcome), as Label reads; URL, when set, lists them.
type CountChip struct {
	Value string
	Label string
	N     int
	URL   string
}

// ReplayCounts are the replays page's counts of what its filter selects:
// Requests (More: more than that many, so the counts cover the newest
// Counted), by status, and their items by outcome.
type ReplayCounts struct {
	Requests int
	More     bool
	Counted  int
	ByStatus []CountChip
	Items    []CountChip
}

// Partial reports whether the counts cover only the newest of the
// requests (a bound on what one page view reads).
func (c ReplayCounts) Partial() bool { return c.More || c.Counted < c.Requests }

// ReplayListModel is the replays page.
type ReplayListModel struct {
	Action   string
	Filter   ReplayFilter
	Errors   map[string]string
	Tenants  []string
	Classes  []string
	Statuses []Option
	// Presets are the one-click time ranges; Orders the two orders (mine
	// first, newest first), the one in use marked.
	Presets []TimePreset
	Orders  []TimePreset
	Counts  ReplayCounts
	Rows    []ReplayRow
	Now     time.Time
	// RequesterName names the requester the filter's identity is (from the
	// rows listed: "" when none is); ClearRequesterURL is the page without
	// that filter.
	RequesterName, ClearRequesterURL string
	// NextURL is the next page (older requests); FirstURL the first page.
	NextURL, FirstURL string
}

// replayCountText is how many requests the filter selects: "1 request",
// "12 requests", "more than 500 requests".
func replayCountText(c ReplayCounts) string {
	if c.More {
		return "More than " + Count(int64(c.Requests)) + " requests"
	}
	return Count(int64(c.Requests)) + " " + Plural(c.Requests, "request", "requests")
}
