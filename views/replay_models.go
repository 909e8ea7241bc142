package views

import "time"

// ReplayItemRow is one item of a request as reviewers see it, with the
// replay rules' verdict on it and why.
type ReplayItemRow struct {
	DeadLetterID  int64
	URL           string
	MsgID         string
	OperationID   string
	Subject       string
	PayloadSHA256 string
	Headers       string // "Name: value" lines
	SkipReason    string
	// Verdict is "go", "block" or "done" (what the rules say of the item;
	// Why is their sentence, Check the check that decided).
	Verdict string
	Why     string
	Check   string
	Edited  bool
	// Outcome is what became of the item once its request was approved (a
	// job state: replayed, deferred, blocked...; "" before), OutcomeReason
	// why, Until when a deferred or retried item goes again; Reconcile the
	// form to settle an item whose outcome nobody can know, when the viewer
	// may.
	Outcome       string
	OutcomeReason string
	Until         time.Time
	Reconcile     *ReconcileForm
}

// VerdictText is how a verdict reads in the items table.
func VerdictText(v string) string {
	switch v {
	case "go":
		return "goes"
	case "done":
		return "skipped"
	case "block":
		return "blocked"
	}
	return v
}

// verdictKind is the badge of a verdict.
func verdictKind(v string) string {
	switch v {
	case "go":
		return BadgeOK
	case "done":
		return BadgeNeutral
	}
	return BadgeWarn
}

// EditView is one edited payload as approvers review it: why, both
// hashes, and the diff.
type EditView struct {
	DeadLetterID int64
	MsgID        string
	Reason       string
	OriginalSHA  string
	EditedSHA    string
	Diff         PayloadDiff
}

// ReplayGroup is one request of a selection on the confirm page.
type ReplayGroup struct {
	RequestID    int64
	Tenant       string
	Class        string
	Needs        string // sentence: what a replay of this class needs
	Items        int
	Skipped      []ReplayItemRow
	Sample       []ReplayItemRow // the first items that will be replayed
	Rate         string
	MaxRate      string
	Confirmation string // phrase to type, or ""
	Error        string
	// Edited: a payload of this request was edited, so it needs one
	// approver whatever its class; Edits show the changes.
	Edited bool
	Edits  []EditView
	// Waits says how many of its items would wait for a duplicate window;
	// NeedsNote that an item's error class needs a reconciliation note;
	// NoRevalidation why its (revalidate) items cannot be replayed here.
	Waits          WaitsView
	NeedsNote      bool
	NoRevalidation string
}

// ReplayConfirmModel is the page where a requester reviews a frozen
// selection and submits it with a reason.
type ReplayConfirmModel struct {
	Action  string
	Groups  []ReplayGroup
	Reason  string
	Errors  map[string]string // "reason", or "rate-<id>" / "confirm-<id>"
	Total   int
	Skipped int
	// BackURL leads back to where the selection was made (nothing is
	// requested until the form is sent; the draft expires on its own).
	BackURL string
	// Forms let the requester edit payloads before submitting (small
	// requests of classes that allow it).
	Forms []PayloadEdit
	// NeedsNote: a request of the selection holds an item whose error
	// class needs reconciliation first; ReconciliationNote is the note
	// typed so far.
	NeedsNote          bool
	ReconciliationNote string
}

// ReplayApprovalRow is one sign-off.
type ReplayApprovalRow struct {
	Approver string
	At       time.Time
	Counts   bool
}

// ReplayProgressModel counts a request's items by outcome; Poll is set
// while it runs. Status and Summary are the request's status and the
// sentence that counts its outcomes, so the block says when it is done.
type ReplayProgressModel struct {
	URL     string
	Poll    bool
	Status  string
	Summary string
	Total   int
	// Pending waits or is being published; Deferred waits for a duplicate
	// window; Unknown got no PubAck and is tried again.
	Pending, Deferred, Unknown int
	Replayed, Skipped          int
	Suppressed, Blocked        int
	NeedsReconciliation        int
	Cancelled                  int
}

// ReplayRequestModel is a request's page: the full intent, approvals,
// progress and the actions the viewer may take.
type ReplayRequestModel struct {
	ID            int64
	Tenant        string
	Class         string
	Status        string
	StatusReason  string
	Requester     string
	Reason        string
	PolicyVersion string
	PolicyCurrent bool
	Rate          string
	Intent        string
	Decision      string
	Needs         string
	Created       time.Time
	Items         []ReplayItemRow
	MoreItems     int
	Approvals     []ReplayApprovalRow
	Progress      ReplayProgressModel
	// Edited: a payload was edited (the request needs an approver who
	// sees Edits, the diffs).
	Edited bool
	Edits  []EditView

	CanApprove   bool
	Confirmation string
	ApproveURL   string
	CanReject    bool
	RejectURL    string
	CanCancel    bool
	CancelURL    string
	// Stop is the emergency stop, for approvers and admins of the tenant
	// while the request may still publish (nil otherwise).
	Stop   *StopForm
	Errors map[string]string
	// ReconciliationNote is what the requester checked before replaying
	// items whose error class needs reconciliation first.
	ReconciliationNote string

	// Forms are the payloads the requester may still change (not for
	// same_operation, only before approval, text payloads only).
	Forms []PayloadEdit
}

// PayloadEdit is the form that changes one item's payload, with why.
type PayloadEdit struct {
	DeadLetterID int64
	MsgID        string
	Payload      string
	URL          string
	Error        string
}

// ApprovalRow is a pending request on the approvals page.
type ApprovalRow struct {
	ID        int64
	URL       string
	Tenant    string
	Class     string
	Items     int
	Requester string
	Reason    string
	Intent    string
	Created   time.Time
	Needs     string
	Own       bool
	// Edited: a payload was edited; Edits show what changed.
	Edited bool
	Edits  []EditView
}

// PolicyRow is one rule of the policy table.
type PolicyRow struct {
	ItemType string // "" for a subject rule
	Subject  string // "" for a rule of every subject
	Class    string
}

// PolicyClassRow is one class with what it needs.
type PolicyClassRow struct {
	Class    string
	Describe string
}

// PolicyModel is the read-only replay policy page.
type PolicyModel struct {
	File    string
	Version string
	Rules   []PolicyRow
	Classes []PolicyClassRow
}

// DeadLetterActions is the replay/discard/resolve panel of a dead letter.
type DeadLetterActions struct {
	ID         int64
	Version    int32
	Status     string
	Class      string
	Needs      string
	CanReplay  bool
	ReplayURL  string
	CanDiscard bool
	DiscardURL string
	CanResolve bool
	ResolveURL string
	Requests   []ApprovalRow
	// Outcomes are what became of this dead letter in its requests (the
	// same order as Requests).
	Outcomes []ReplayItemRow
	// Refused is why the replay rules would leave it out of a selection now
	// (and RefusedBy the rule), "" when they would not: the page says so
	// instead of offering a replay that cannot happen.
	Refused, RefusedBy string
	// Chain is the replay loop it is part of (more than one link); Fixes
	// the fixes recorded for its item type or error group; Fix the form to
	// record one, when the viewer may.
	Chain []ChainLinkView
	Fixes []FixView
	Fix   *FixForm
}
