package replay

import (
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Status is where a replay request stands.
type Status string

// Request statuses. A draft is a frozen selection waiting for the
// requester's reason and confirmation; void means it cannot run (nothing
// left to replay, or the policy changed under it).
const (
	StatusDraft           Status = "draft"
	StatusPendingApproval Status = "pending_approval"
	StatusApproved        Status = "approved"
	// StatusRunning: something of the request may have been published (a
	// gate marked a job attempted and no answer undid it). A claim that
	// published nothing leaves it approved, its expiry still judged.
	StatusRunning Status = "running"
	StatusDone    Status = "done"
	// StatusDoneWithProblems: no item is left to run, and not every item
	// was replayed or skipped (StatusReason counts them).
	StatusDoneWithProblems Status = "done_with_problems"
	StatusRejected         Status = "rejected"
	StatusCancelled        Status = "cancelled"
	StatusVoid             Status = "void"
)

// requestStatuses are every Status.
var requestStatuses = []Status{StatusDraft, StatusPendingApproval, StatusApproved, StatusRunning, StatusDone,
	StatusDoneWithProblems, StatusRejected, StatusCancelled, StatusVoid}

// Open reports whether the request can still change (approve, cancel).
func (s Status) Open() bool { return replaypolicy.RequestOpen(string(s)) }

// Request is a request to replay a frozen set of dead letters of one
// tenant and one policy class.
type Request struct {
	ID        int64
	Batch     string
	Tenant    string
	Class     replaypolicy.Class
	Status    Status
	Requester quarantine.Actor
	// RequesterNow is the requester's identity as the directory has it
	// now (zero: never seen), read with the request (peopleColumns)
	// wherever one is read to be judged, counted or acted on (getRequest,
	// a batch, List, the approval lists); zero only in the reads that
	// judge no person (the emergency stop's, a policy change's voiding
	// and the draft expiry's).
	RequesterNow quarantine.Actor
	// KnownAs is each address the console has seen the requester's and
	// each approver's identity with (everyone who ever approved it), on
	// any request, and each address seen verified of every identity
	// linked to them (replaypolicy.Request.KnownAs; identity_addresses),
	// read with RequesterNow (knownAsColumn, linkedFrom); SeenBy adds an
	// actor's. Each person is the one behind all of them.
	KnownAs           []quarantine.Actor
	Reason            string
	StatusReason      string
	PolicyVersion     string
	Rate              float64
	IntentHash        []byte
	ItemCount         int
	SkippedCount      int
	TypedConfirmation string
	PayloadEdited     bool
	// ReconciliationNote is what the requester checked before replaying
	// items whose error class needs reconciliation first ("" when none
	// does); it is part of the intent.
	ReconciliationNote string
	// ApprovalsNeeded is what the replay rules asked of it when it was
	// submitted or its payload edited (replaypolicy.Require); ClosedBy who
	// rejected or cancelled it (StatusReason says why), zero otherwise.
	ApprovalsNeeded int
	// Classes is every class its items were classed by when it was
	// submitted (replaypolicy.Terms.Union; empty before): the knobs it is
	// held to are the strictest of them.
	Classes     []replaypolicy.Class
	ClosedBy    quarantine.Actor
	CreatedAt   time.Time
	SubmittedAt *time.Time
	ApprovedAt  *time.Time
	FinishedAt  *time.Time
	Version     int
}

// IntentHex is the intent hash as approvers see it.
func (r *Request) IntentHex() string { return hex.EncodeToString(r.IntentHash) }

// HiddenFrom reports whether r does not exist for viewer: a request never
// submitted (SubmittedAt nil: a draft, or one voided or cancelled before
// it was submitted) is its requester's alone, whatever its status now, so
// what the requester typed into it (an edited payload, its reason) is
// never shown to anyone else. The lists select the same requests in SQL
// (condUnsubmittedOwn).
func (r Request) HiddenFrom(viewer quarantine.Actor) bool {
	return r.SubmittedAt == nil && replaypolicy.MaySubmit(r.Requester, viewer).Outcome != replaypolicy.Go
}

// Item is one dead letter of a request, as it will be published, with the
// replay rules' verdict on it when it was last judged: Verdict ("go",
// "block" or "done"), the Check that decided and, for an item left out,
// the sentence why (SkipReason).
type Item struct {
	DeadLetterID int64
	// DeadLetteredAt is the dead letter's time: with DeadLetterID its key.
	DeadLetteredAt time.Time
	Position       int
	MsgID          string
	OperationID    string
	CorrelationID  string
	Subject        string
	Headers        []dlq.HeaderValue
	PayloadSHA256  []byte
	SkipReason     string
	Verdict        string
	Check          string
	// Held: the item holds its dead letter (the request was submitted and
	// the item's job has not ended).
	Held bool
	// Edited: the requester replaced the payload (EditReason says why);
	// PayloadSHA256 is then the edited payload's.
	Edited     bool
	EditReason string
	// Outcome is the state of the item's job ("" while it has none: the
	// request is not approved); OutcomeReason says why, and Until is when
	// a deferred or unknown job is tried again.
	Outcome       JobState
	OutcomeReason string
	Until         *time.Time
	// Settled is how many times a person settled the job's unknown
	// outcome: the episode a reconcile form of the item is drawn in
	// (ReconcileInput.Settled).
	Settled int32
	// Cut says which values a page's read of the item cut (View, Selection:
	// see shownItemColumns); such an item has no Headers.
	Cut ItemCut
}

// ItemCut names the values of an item a page read cut to
// dlq.ListTextChars characters, as the list cuts a producer's values: the
// dead letter's page shows them whole.
type ItemCut struct {
	MsgID, OperationID, Subject bool
}

// Item verdicts as stored (replay_items.verdict).
const (
	VerdictGo    = "go"
	VerdictBlock = "block"
	VerdictDone  = "done"
)

// VerdictOf is the stored name of a verdict's outcome.
func VerdictOf(v replaypolicy.Verdict) string { return verdictName(v.Outcome) }

// verdictName is how an outcome of the rules is stored on an item.
func verdictName(o replaypolicy.Outcome) string {
	switch o {
	case replaypolicy.Go:
		return VerdictGo
	case replaypolicy.Done:
		return VerdictDone
	}
	return VerdictBlock
}

// Approval is one approver's sign-off. VoidedAt is when it stopped
// counting because its approver lost the right to approve (nil while it
// counts), VoidReason why.
type Approval struct {
	Approver   quarantine.Actor
	IntentHash []byte
	At         time.Time
	VoidedAt   *time.Time
	VoidReason string
	// ApproverNow is the approver's identity as the directory has it now
	// (their email may have changed since); zero when never seen.
	ApproverNow quarantine.Actor
}

// Answers for what does not exist or is not the caller's to see.
var (
	errNoRequest = quarantine.Errorf(quarantine.ENOTFOUND, "There is no such replay request.")
	errNoBatch   = quarantine.Errorf(quarantine.ENOTFOUND, "There is no such selection.")
	errNoItem    = quarantine.Errorf(quarantine.ENOTFOUND, "There is no such item.")
)

// requestColumns are what scanRequest scans, in order.
const requestColumns = `id, batch, tenant, class, status, requester_issuer, requester_subject, requester_email, requester_email_verified,
    reason, status_reason, policy_version, rate, intent_hash, item_count, skipped_count, typed_confirmation,
    payload_edited, reconciliation_note, approvals_needed, closed_by_issuer, closed_by_subject, closed_by_email, closed_by_email_verified,
    created_at, submitted_at, approved_at, finished_at, version, classes`

func scanRequest(row pgx.CollectableRow) (Request, error) {
	var r Request
	return r, scanRequestInto(row, &r)
}

// scanRequestInto scans requestColumns into r, then more.
func scanRequestInto(row pgx.CollectableRow, r *Request, more ...any) error {
	var class, status string
	err := row.Scan(append([]any{&r.ID, &r.Batch, &r.Tenant, &class, &status, &r.Requester.Issuer, &r.Requester.Subject, &r.Requester.Email,
		&r.Requester.EmailVerified, &r.Reason, &r.StatusReason, &r.PolicyVersion, &r.Rate, &r.IntentHash, &r.ItemCount, &r.SkippedCount, &r.TypedConfirmation,
		&r.PayloadEdited, &r.ReconciliationNote, &r.ApprovalsNeeded, &r.ClosedBy.Issuer, &r.ClosedBy.Subject, &r.ClosedBy.Email,
		&r.ClosedBy.EmailVerified, &r.CreatedAt, &r.SubmittedAt, &r.ApprovedAt, &r.FinishedAt, &r.Version, &r.Classes}, more...)...)
	r.Class, r.Status = replaypolicy.Class(class), Status(status)
	return err
}

// itemColumns are what scanItem scans, in order, of replay_items i.
const itemColumns = `i.dead_letter_id, i.position, i.msg_id, i.operation_id, i.correlation_id, i.subject, i.headers, i.payload_sha256,
    i.skip_reason, i.verdict, i.verdict_check, i.held, i.payload IS NOT NULL, i.edit_reason`

// shownItemColumns are itemColumns as the pages read them, for up to
// 20,000 items a page: the message, operation and correlation ids and the
// subject cut to $3 (dlq.ListTextChars) characters, and no headers (NULL):
// a page does not show them, and they can come to 64 MiB a selection. Each
// item links to its dead letter's page, which shows its headers and its
// values whole. cutColumns say what was cut (scanShownItem).
const shownItemColumns = `i.dead_letter_id, i.position, left(i.msg_id, $3), left(i.operation_id, $3), left(i.correlation_id, $3),
    left(i.subject, $3), NULL::jsonb, i.payload_sha256, i.skip_reason, i.verdict, i.verdict_check, i.held, i.payload IS NOT NULL,
    i.edit_reason`

// cutColumns are what scanShownItem scans after outcomeColumns.
const cutColumns = `char_length(i.msg_id) > $3, char_length(i.operation_id) > $3, char_length(i.subject) > $3`

// outcomeColumns are what scanItemOutcome scans after itemColumns: the
// item's job, when it has one (replay_jobs j).
const outcomeColumns = `coalesce(j.state, ''), coalesce(j.result, ''), j.not_before, coalesce(j.settled, 0)`

func scanItem(row pgx.CollectableRow) (Item, error) {
	var it Item
	return it, scanItemInto(row, &it)
}

func scanItemInto(row pgx.CollectableRow, it *Item, more ...any) error {
	var hs []byte
	dest := append([]any{&it.DeadLetterID, &it.Position, &it.MsgID, &it.OperationID, &it.CorrelationID, &it.Subject,
		&hs, &it.PayloadSHA256, &it.SkipReason, &it.Verdict, &it.Check, &it.Held, &it.Edited, &it.EditReason}, more...)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	if hs == nil {
		return nil // read without them (shownItemColumns)
	}
	return json.Unmarshal(hs, &it.Headers)
}

// scanShownItem scans shownItemColumns, outcomeColumns and cutColumns.
func scanShownItem(row pgx.CollectableRow) (Item, error) {
	var it Item
	var until *time.Time
	if err := scanItemInto(row, &it, &it.Outcome, &it.OutcomeReason, &until, &it.Settled, &it.Cut.MsgID, &it.Cut.OperationID, &it.Cut.Subject); err != nil {
		return it, err
	}
	it.setUntil(until)
	return it, nil
}

// scanItemOutcome scans an item and what became of it.
func scanItemOutcome(row pgx.CollectableRow) (Item, error) {
	var it Item
	var until *time.Time
	if err := scanItemInto(row, &it, &it.Outcome, &it.OutcomeReason, &until, &it.Settled); err != nil {
		return it, err
	}
	it.setUntil(until)
	return it, nil
}

// setUntil keeps a job's not_before as Until when the item waits for it.
func (it *Item) setUntil(notBefore *time.Time) {
	if it.Outcome == JobDeferred || it.Outcome == JobUnknown {
		it.Until = notBefore
	}
}

func scanApproval(row pgx.CollectableRow) (Approval, error) {
	var a Approval
	err := row.Scan(&a.Approver.Issuer, &a.Approver.Subject, &a.Approver.Email, &a.Approver.EmailVerified, &a.IntentHash, &a.At,
		&a.VoidedAt, &a.VoidReason, &a.ApproverNow.Issuer, &a.ApproverNow.Subject, &a.ApproverNow.Email, &a.ApproverNow.EmailVerified)
	return a, err
}

// policyRequest is req as the replay rules see it, with its approvals.
func policyRequest(req Request, approvals []Approval) replaypolicy.Request {
	pr := replaypolicy.Request{
		Class: req.Class, Items: req.ItemCount, Bulk: req.ItemCount > 1, Requester: req.Requester, RequesterNow: req.RequesterNow, Reason: req.Reason,
		PayloadEdited: req.PayloadEdited, IntentHash: req.IntentHex(), TypedConfirmation: req.TypedConfirmation,
		PolicyVersion: req.PolicyVersion, Rate: req.Rate, ReconciliationNote: req.ReconciliationNote, Union: req.Classes,
		KnownAs: req.KnownAs,
	}
	if req.SubmittedAt != nil {
		pr.RequestedAt = *req.SubmittedAt
	}
	for _, a := range approvals {
		void := a.VoidReason
		if a.VoidedAt != nil && void == "" {
			void = "voided" // a void approval never counts, with or without its reason
		}
		pr.Approvals = append(pr.Approvals, replaypolicy.Approval{Approver: a.Approver, At: a.At, IntentHash: hex.EncodeToString(a.IntentHash),
			Void: void, ApproverNow: a.ApproverNow})
	}
	return pr
}
