package views

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// ReplayItemRow is one item of a request as reviewers see it, with the
// replay rules' verdict on it and why.
type ReplayItemRow struct {
	DeadLetterID  int64
	URL           string
	MsgID         string
	OperationID   string
	Subject       string
	PayloadSHA256 string
	PayloadURL    string // the payload as it will be sent, for those who may download it ("" otherwise, and for a skipped item)
	// MsgIDCut, OperationIDCut and SubjectCut: the value is the start of a
	// longer one (cut as the list cuts a producer's values); URL, the dead
	// letter's page, shows it whole.
	MsgIDCut, OperationIDCut, SubjectCut bool
	SkipReason                           string
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
	// Settler, for an item that needs reconciliation and a viewer who may
	// not settle it (no Reconcile), says who does.
	Settler *SettleWait
	// NotRun, when set, says why an item that has no outcome never will:
	// its request ended before it ran (rejected, cancelled, void), so the
	// verdict it had is no promise that it goes.
	NotRun string
	// ErrorClass and Error are why its dead letter failed, as the producer
	// said (Error: the start of it, ErrorCut when there is more than that;
	// both "" when the dead letter is gone: Removed, retention removed it).
	ErrorClass string
	Error      string
	ErrorCut   bool
	Removed    bool
	// CameBack is the dead letter its replay came back as (nil: none did):
	// the consumer failed on the replayed message again.
	CameBack *CameBackView
}

// ItemVerdictID is the id of the cell of an item's verdict and outcome on
// a request's page, by its dead letter: what the progress poll swaps.
func ItemVerdictID(deadLetterID int64) string {
	return "item-verdict-" + strconv.FormatInt(deadLetterID, 10)
}

// withoutSettleForm is r without its form to settle the item, which the
// verdict cell draws apart, so that the progress poll keeps it as it is.
func (r ReplayItemRow) withoutSettleForm() ReplayItemRow {
	r.Reconcile = nil
	return r
}

// ReplayLiveModel is what a request page's progress poll redraws of the
// page besides the progress while the request runs (ReplayProgressLive):
// Rows, the item rows that changed since the page's last poll (their
// verdict cells); CameBack, how many of its first items counted replayed
// came back (of its first CameBackOf, when it holds more); Settler, who
// settles its items that need reconciliation, to a viewer who may not.
type ReplayLiveModel struct {
	Rows       []ReplayItemRow
	CameBack   int
	CameBackOf int
	Settler    *SettleWait
}

// CameBackView is a dead letter an item's replay came back as: its id,
// page, status and error class. More: more than one came back, and the
// replay chain on the item's dead letter's page (ItemURL) lists each.
type CameBackView struct {
	ID         int64
	URL        string
	Status     string
	ErrorClass string
	More       bool
	ItemURL    string
}

// NotRunText is how every page names an item that never ran because its
// request ended first (replay.NotRunText).
const NotRunText = "not run"

// NotRunValue is the value of the not run count among item outcomes
// (OutcomeText reads it as NotRunText).
const NotRunValue = "not_run"

// NotRunLabel is NotRunText as a label.
const NotRunLabel = "Not run"

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
	// OriginalURL and EditedURL download the two payloads; empty when the
	// viewer may not download payloads.
	OriginalURL, EditedURL string
}

// ReplayGroup is one request of a selection on the confirm page.
type ReplayGroup struct {
	RequestID int64
	Tenant    string
	Class     string
	Needs     string // sentence: what a replay of this class needs
	// OnSubmit says what happens to it when the form is sent ("publishes
	// as soon as you submit", "waits for 2 approvers, not you"); Approvals
	// is how many approvers it then waits for (-1: it does not go: void or
	// refused).
	OnSubmit  string
	Approvals int
	Items     int
	Skipped   []ReplayItemRow
	// SkippedCount is how many items are skipped or blocked in all; the
	// page reads the first items only, so Skipped can be fewer, and
	// RequestURL (the draft's page) lists every one.
	SkippedCount int
	RequestURL   string
	Sample       []ReplayItemRow // the first items that will be replayed
	Rate         string
	MaxRate      string
	Confirmation string // phrase to type, or ""
	Typed        string // the phrase as typed, kept when the form comes back for the same intent
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
	// ClassGone: the policy in force no longer has its class, so it cannot
	// be requested (OnSubmit says so); no rate is asked for.
	ClassGone bool
}

// ReplayConfirmModel is the page where a requester reviews a frozen
// selection and submits it with a reason.
type ReplayConfirmModel struct {
	Action string
	// VoidedBy is, when the submit found nothing of the selection left and
	// voided it, the open request that holds what it had (0: none does
	// alone), VoidedByYours whether the viewer requested that one: the
	// error summary's title says so, linked.
	Voided        bool
	VoidedBy      int64
	VoidedByYours bool
	Groups        []ReplayGroup
	Reason        string
	Errors        map[string]string // "reason", or "rate-<id>" / "confirm-<id>"
	// Total items go to the requests; Skipped (already replayed) and
	// Blocked (the rules refuse them) are left out.
	Total, Skipped, Blocked int
	// BackURL leads back to where the selection was made (nothing is
	// requested until the form is sent; the draft expires on its own).
	BackURL string
	// Requestable: a request of the selection can be requested as it
	// stands (one is neither void nor refused by the rules); without one,
	// the page offers no submit, only the way back.
	Requestable bool
	// Forms let the requester edit payloads before submitting (small
	// requests of classes that allow it).
	Forms []PayloadEdit
	// NeedsNote: a request of the selection holds an item whose error
	// class needs reconciliation first; ReconciliationNote is the note
	// typed so far.
	NeedsNote          bool
	ReconciliationNote string
	// LeftOut is what the filter the selection was made by ("Replay all
	// matching") selected in tenants where the viewer may not request
	// replays, which no request of it holds; nil: nothing.
	LeftOut *LeftOut
}

// ApprovalsView is a request's approvals: the count "k of n" (one
// source: replay.CountOf), whether it needs any, and each sign-off.
type ApprovalsView struct {
	Count  string
	Needed bool
	Rows   []ReplayApprovalRow
	// Void: the request is void; Unreplayable: nothing in it could be
	// replayed (every item blocked or skipped), so no approver was asked
	// (else its status reason says why it is void: it expired, the policy
	// changed). ClassNeeds is how many its class asks for.
	Void, Unreplayable bool
	ClassNeeds         int
}

// ItemPayloadView is one item's payload as it will be sent.
type ItemPayloadView struct {
	MsgID   string
	Edited  bool
	Payload PayloadView
	// Removed: retention removed the dead letter and its payload.
	Removed bool
}

// RemovedPayloadText says why an item's payload is neither shown nor
// downloaded: retention removed its dead letter (the request page, the
// item's download).
const RemovedPayloadText = "Retention removed this dead letter, and its payload with it: nothing of it is left to show or download. " +
	"The request's items still show its message id and its payload's SHA-256."

// NoDownloadText is what a page says where it would link a payload's
// download for a reader who may not download payloads.
const NoDownloadText = "Your role does not allow downloading payloads."

// ReplayApprovalRow is one sign-off. Ignored says why it does not count
// (expired, for a different intent…; "" when it counts).
type ReplayApprovalRow struct {
	Approver string
	At       time.Time
	Ignored  string
}

// ReplayProgressModel counts a request's items by outcome; Poll is set
// while the request may still change (waiting for approval, approved,
// running) and stops once it ended. Status and Summary are the request's
// status and the sentence that counts its outcomes, so the block says
// when it is done. URL carries the status the page shows: when the
// request's status moved on, the poll reloads the whole page (actions,
// approvals and banners change with it).
type ReplayProgressModel struct {
	URL  string
	Poll bool
	// Every is the polling interval ("2s").
	Every   string
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
	// NotApplied were settled "not applied, leave it": their dead
	// letters wait in quarantine again.
	NotApplied int
	// Applied were settled "applied" by a person: done, never counted
	// replayed.
	Applied int
	// Waiting are items with no outcome yet because the request is not
	// approved; NotRun those that never ran because it ended before
	// (rejected, cancelled, void).
	Waiting, NotRun int
	// NotStored are pending items the broker did not store at their last
	// publish (a full target stream, say), tried again until it does;
	// NotStoredWhy one's reason.
	NotStored    int
	NotStoredWhy string
}

// ProgressSegment is one outcome's share of the progress bar, in
// thousandths of its width (X from the left, W wide).
type ProgressSegment struct {
	Class string
	Label string
	N     int
	X, W  int
}

// Segments are the bar's shares: replayed, skipped, what did not happen as
// asked, cancelled, not run, and what is still to go, in that order. What
// is still to go is drawn as the empty track (bar--togo): the bar fills as
// items come to an outcome, so none is full while anything waits.
func (m ReplayProgressModel) Segments() []ProgressSegment {
	if m.Total == 0 {
		return nil
	}
	parts := []ProgressSegment{
		{Class: "bar--ok", Label: "replayed", N: m.Replayed},
		{Class: "bar--ok", Label: AppliedLabel, N: m.Applied},
		{Class: "bar--neutral", Label: "skipped", N: m.Skipped},
		{Class: "bar--warn", Label: "suppressed, blocked, to reconcile or not applied", N: m.Suppressed + m.Blocked + m.NeedsReconciliation + m.NotApplied},
		{Class: "bar--muted", Label: "cancelled", N: m.Cancelled},
		{Class: "bar--muted", Label: NotRunText, N: m.NotRun},
		{Class: "bar--togo", Label: "to go", N: m.Pending + m.Deferred + m.Unknown + m.Waiting},
	}
	var out []ProgressSegment
	x, done := 0, 0
	for _, p := range parts {
		if p.N == 0 {
			continue
		}
		done += p.N
		end := done * 1000 / m.Total
		p.X, p.W = x, end-x
		x = end
		out = append(out, p)
	}
	return out
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
	// Version is the request's version the page was read at: the approve
	// form sends it back with the intent, so that an approval is of the
	// page its approver read (an edit and its way back make the intent
	// again, not the edit reasons read).
	Version  int
	Decision string
	Needs    string
	// Created is when the selection was frozen; Submitted when the
	// requester submitted it (zero for a draft).
	Created   time.Time
	Submitted time.Time
	// ClosedBy rejected or cancelled it (StatusReason says why).
	ClosedBy string
	// AuditURL lists its events in the audit log, for those who may read it.
	AuditURL  string
	Items     []ReplayItemRow
	MoreItems int
	// CameBack is how many of its items counted replayed (of
	// Progress.Replayed) came back as new dead letters: the broker stored
	// the replay, and the consumer failed on it again. CameBackOf, when
	// not zero, is how many of its first items were checked (a request of
	// more: replay.CameBackItemsMax).
	CameBack   int
	CameBackOf int
	// Settler says, once for the Items section, who settles its items that
	// need reconciliation, when the viewer may not (the rows' Settler,
	// which are the same for every item of a request, moved here; nil:
	// they may, or none waits).
	Settler   *SettleWait
	Approvals ApprovalsView
	Progress  ReplayProgressModel
	// Payloads are the payloads of the first items as they will be sent.
	Payloads []ItemPayloadView
	// ApproveRefused says why the viewer, an approver, may not approve
	// from this page ("" otherwise).
	ApproveRefused string
	// Edited: a payload was edited (the request needs an approver who
	// sees Edits, the diffs).
	Edited bool
	Edits  []EditView

	CanApprove   bool
	Confirmation string
	// ConfirmationTyped is the phrase as the approver typed it, when the
	// approval came back refused for it: to correct, not type again.
	ConfirmationTyped string
	ApproveURL        string
	CanReject         bool
	RejectURL         string
	CanCancel         bool
	CancelURL         string
	// Stop is the emergency stop, for approvers and admins of the tenant
	// while the request may still publish (nil otherwise).
	Stop *StopForm
	// Again offers, on an ended request, to request again what it did not
	// replay and is back in quarantine (Count 0: no offer).
	Again RequestAgainForm
	// MayRepublish: an item of it that needs reconciliation could be
	// settled "republish" (replay.Request.MayEverRepublish: by what it
	// recorded, under any policy; never when it needed two approvers), so
	// a request done with problems may still publish, and its stop card
	// says a stop ends that. RepublishNow: the policy now lets one person
	// republish such an item (replay.Service.MayRepublish, what Reconcile
	// lets through); without it the card says what happens now: not
	// republished while the policy asks more approvers.
	MayRepublish bool
	RepublishNow bool
	Errors       map[string]string
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
	// LineBreaks is how Payload, as stored, breaks its lines, which the
	// form sends with the edit, and MixedBreaks whether it mixes them, which
	// the form says an edit in a browser cannot keep (LineBreaksOf).
	LineBreaks  string
	MixedBreaks bool
	Reason      string // why, as typed when the form comes back
	URL         string
	Error       string
	// Edited: the item holds an edit, which the form offers to undo (the
	// payload received goes back), saying beforehand what that does: Draft,
	// in a draft (no approval given yet); UndoLeavesOut, why the draft
	// would then leave the item out; UndoApproves, that the request then
	// needs no approval and is approved and published at once. UndoRefused
	// says why the rules refuse the undo (no button is offered).
	Edited        bool
	Draft         bool
	UndoLeavesOut string
	UndoApproves  bool
	UndoRefused   string
	// UndoStale: UndoRefused is this console's, whose replay policy is not
	// the active version; not the item's.
	UndoStale bool
	// UndoOnly: the item was left out (LeftOut says why, a sentence) and
	// holds an edit all the same, which sends nothing: the form shows the
	// edit (Payload, "" when it is not text) and offers only its undo.
	UndoOnly bool
	LeftOut  string
	// TooLarge: the payload, of Size bytes, is over Max and not edited in
	// the browser; DownloadURL downloads it ("" when the viewer may not).
	TooLarge    bool
	Size, Max   int64
	DownloadURL string
	// OnConfirm: the form is on a confirm page, and sends the replay's
	// reason with the edit (replay_reason), so that the page the edit
	// comes back to keeps it: ReplayReason, the reason the page was read
	// with, which app.js replaces on submit with what the page's reason
	// field (ReplayReasonField) holds then.
	OnConfirm    bool
	ReplayReason string
	// Carried are the other fields of the confirm page's request form the
	// edit sends along the same way (the reconciliation note, each
	// request's rate and typed confirmation), so that nothing typed there
	// is lost across the edit.
	Carried []CarriedField
}

// CarriedField is a hidden copy, in a payload form, of the request form's
// field whose id is Of: Value as the page was read, which app.js replaces
// on submit with what the field holds then (data-value-of); Name is what
// the copy is sent as.
type CarriedField struct {
	Name, Value, Of string
}

// ReplayReasonField is the id of a confirm page's reason field, which its
// payload forms send the value of (PayloadEdit.OnConfirm).
const ReplayReasonField = "reason"

// ApprovalRow is a pending request on the approvals page.
type ApprovalRow struct {
	ID     int64
	URL    string
	Tenant string
	Class  string
	// Items are its items as every page counts them (replay.ItemCounts:
	// "0 replayed · 2 to go · 1 blocked").
	Items     string
	Requester string
	Reason    string
	Intent    string
	Created   time.Time
	Needs     string
	// Own: the viewer may be its requester, as Approve judges it
	// (replay.Request.MayApprove): they may not approve it. OtherAccount:
	// Own, but the requester is another account than the viewer's (the
	// same mailbox, replaypolicy.SamePerson), so the page does not say
	// "(you)" of it.
	Own          bool
	OtherAccount bool
	// Edited: a payload was edited; Edits show what changed (MoreEdits:
	// not all of them: the request page shows the rest).
	Edited    bool
	Edits     []EditView
	MoreEdits bool
	// Submitted is when it was submitted; Approvals "k of n" so far;
	// Expires when the first approval so far stops counting.
	Submitted time.Time
	Approvals string
	Expires   *time.Time
	// YouApproved: the viewer's own approval is among them, and it waits
	// for StillNeeded more approvers.
	YouApproved bool
	StillNeeded int
	// MayRepublish: on the stop page, an item of it that needs
	// reconciliation could be settled "republish"
	// (replay.Request.MayEverRepublish, as the stop decides), so one done
	// with problems may still publish; RepublishNow: the policy now lets
	// one person do it (replay.Service.MayRepublish), else only a later
	// policy that asks fewer approvers would.
	MayRepublish bool
	RepublishNow bool
}

// ApprovalsModel is the approvals page: requests waiting for a sign-off,
// the longest waiting first, a page at a time. More is how many more wait
// after this page (NextURL lists them); Later whether this is a page after
// the first (FirstURL).
type ApprovalsModel struct {
	Rows              []ApprovalRow
	Now               time.Time
	More              int
	Later             bool
	NextURL, FirstURL string
}

// approvalsMoreText says how many more requests wait after the page, of
// rows shown.
func approvalsMoreText(rows, more int) string {
	return "These " + Count(int64(rows)) + " have waited longest; " + Count(int64(more)) + " more " +
		Plural(more, "request waits", "requests wait") + " after them:"
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

// PolicyModel is the read-only replay policy page: the active version's
// rules and retention terms, or one version's (Viewing).
type PolicyModel struct {
	File    string
	Version string
	// Viewing is set on the page of one version (?version=): it shows
	// that version alone, its rules or its retention terms.
	Viewing *PolicyViewing
	// ShowRules and ShowRetention: the page has the rules, the retention
	// terms; RulesNotRecorded and RetentionNotRecorded say why what they
	// say is not known ("" when it is).
	ShowRules, ShowRetention               bool
	RulesNotRecorded, RetentionNotRecorded string
	Rules                                  []PolicyRow
	Classes                                []PolicyClassRow
	// ErrorClasses are the error-class rules (Class holds the error class),
	// which hold an item back or tighten its class whatever its item type
	// says; GenerationLimit is the generation from which only manual
	// replays a dead letter.
	ErrorClasses    []PolicyClassRow
	GenerationLimit int
	// Retention is the file's [retention] section (not part of Version).
	Retention RetentionView
	// UnlistedSubjects is the table's warning that no subject rule matches
	// every target subject (replaypolicy.Table.UnlistedSubjects); "" when
	// one does.
	UnlistedSubjects string
	// Stale is set when this console's table is not the active version.
	Stale *PolicyStale
	// Rollback is set while a rollback allowance waits.
	Rollback *PolicyRollback
	// RetentionStale is set when this console's retention terms are not
	// the active ones.
	RetentionStale *PolicyStale
}

// DeadLetterActions is the replay/discard/resolve panel of a dead letter.
type DeadLetterActions struct {
	ID         int64
	Version    int32
	Tenant     string
	Status     string
	Class      string
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
	// ChainMore: the chain has more links than Chain shows; ChainEarlier:
	// it goes back further than its oldest link shown.
	ChainMore, ChainEarlier bool
	// Settler says who settles its replay that needs reconciliation, when
	// the viewer may not (nil: they may, or none waits).
	Settler *SettleWait
}

// settler is who settles the dead letter's replay that needs
// reconciliation, for a viewer who may not.
func (m DeadLetterActions) settler() SettleWait {
	if m.Settler != nil {
		return *m.Settler
	}
	return SettleWait{Tenant: m.Tenant}
}

// ClassApprovalsText says what a class asks of approvers, which needs n
// of them: "manual replays need 2 distinct approvers, neither of them the
// requester".
func ClassApprovalsText(class string, n int) string {
	switch n {
	case 0:
		return Label(class) + " replays run without an approver"
	case 1:
		return Label(class) + " replays need one approver who is not the requester"
	case 2:
		return Label(class) + " replays need 2 distinct approvers, neither of them the requester"
	}
	return fmt.Sprintf("%s replays need %d distinct approvers, none of them the requester", Label(class), n)
}

// StillNeededText is what a request the viewer approved waits for.
func StillNeededText(n int) string {
	switch n {
	case 0:
		return "you approved"
	case 1:
		return "you approved; waiting for another approver"
	}
	return fmt.Sprintf("you approved; waiting for %d more approvers", n)
}

// MayReconcile reports whether the viewer may settle one of the dead
// letter's replays whose outcome nobody knows (its form is in Outcomes).
func (m DeadLetterActions) MayReconcile() bool {
	for _, o := range m.Outcomes {
		if o.Reconcile != nil {
			return true
		}
	}
	return false
}

// SubmittedRequest is one request a submitted selection became: Items its
// items as every page counts them, Next what happens to it next ("runs
// now", "waits for 2 approvers").
type SubmittedRequest struct {
	ID     int64
	URL    string
	Tenant string
	Class  string
	Status string
	Items  string
	Next   string
	// CameBack is how many of its replayed items came back as new dead
	// letters, as the replays list counts them.
	CameBack int
}

// ReplaySubmittedModel is the page a selection that became more than one
// request lands on once submitted: every request, and what each does next.
// While one of them may still change, its table polls URL every Every
// ("2s") and swaps itself; Poll is false once every one ended.
type ReplaySubmittedModel struct {
	Requests []SubmittedRequest
	URL      string
	Poll     bool
	Every    string
}

// The line breaks of a payload a form edits (LineBreaksOf).
const (
	LineBreaksLF   = "lf"
	LineBreaksCRLF = "crlf"
)

// LineBreaksOf is how payload breaks its lines: "crlf" when every line
// break of it is CRLF (and it has one), else "lf"; mixed when it breaks
// them in more than one way (LF and CRLF), or with a lone CR. A browser
// sends a textarea's line breaks as CRLF whatever they were, so an edit
// form says how the payload it shows breaks its lines and the edit keeps
// them so: a payload of LF lines edited in a browser would otherwise be
// sent with CRLF lines nobody chose. A mixed payload cannot be kept so
// (it is taken as LF), which the form says.
func LineBreaksOf(payload []byte) (breaks string, mixed bool) {
	lf, crlf, cr := bytes.Count(payload, []byte("\n")), bytes.Count(payload, []byte("\r\n")), bytes.Count(payload, []byte("\r"))
	mixed = (crlf > 0 && crlf < lf) || cr > crlf
	if !mixed && lf > 0 && crlf == lf {
		return LineBreaksCRLF, false
	}
	return LineBreaksLF, mixed
}
