package views

import "time"

// PathReplays is the replays page.
const PathReplays = "/replay/requests"

// ReplayFilter is the replays page filter as typed: each field is the
// query parameter of its name ("mine": "1").
type ReplayFilter struct {
	Status string
	Tenant string
	Class  string
	Mine   bool
}

// ReplayRow is one request on the replays page.
type ReplayRow struct {
	ID     int64
	URL    string
	Tenant string
	Class  string
	Status string
	// Items is every item of the request; Ended how many came to an
	// outcome.
	Items, Ended int
	Requester    string
	Own          bool
	Reason       string
	Edited       bool
	// Submitted is when the requester submitted it (zero for a draft).
	Submitted time.Time
	// Approvals is "k of n" (replay.ApprovalCount); NeedsApproval whether
	// its rules ask for any.
	Approvals     string
	NeedsApproval bool
	// Expires is when what it waits for expires (nil: nothing does).
	Expires *time.Time
	// ClosedBy rejected or cancelled it, and ClosedWhy is why.
	ClosedBy, ClosedWhy string
}

// ReplayListModel is the replays page.
type ReplayListModel struct {
	Action   string
	Filter   ReplayFilter
	Errors   map[string]string
	Tenants  []string
	Classes  []string
	Statuses []Option
	Rows     []ReplayRow
	Now      time.Time
	// NextURL is the next page (older requests); FirstURL the first page.
	NextURL, FirstURL string
}
