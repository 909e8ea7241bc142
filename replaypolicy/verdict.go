package replaypolicy

import (
	"fmt"
	"time"
)

// Outcome is what a rule says should become of an item.
type Outcome int

// Outcomes of the rules. The zero value is Block, so a Verdict nobody
// filled in lets nothing through.
const (
	// Block: the item may not be replayed as things stand; the verdict's
	// Reason says why and what to do instead. At execution the job is
	// blocked.
	Block Outcome = iota
	// Go: nothing stops the item (at execution: publish it now).
	Go
	// Done: the item was already replayed successfully; it is skipped, not
	// re-sent, which is not an error.
	Done
	// Cancel: the request was cancelled (execution).
	Cancel
	// Fail: the target cannot take the item (execution).
	Fail
	// Wait: not decidable in this claim; the job is left for a later one
	// (execution).
	Wait
	// Retry: a fact could not be read, or a publish got no PubAck; the job
	// is tried again later under the same message id (execution).
	Retry
	// Defer: not before Until: the target stream would drop the publish as a
	// duplicate of a message that is not ours (execution).
	Defer
	// Reconcile: what happened cannot be known and a republish could be a
	// second effect; a person decides (execution).
	Reconcile
	// Replayed: the broker stored our publish (execution).
	Replayed
	// Suppressed: the broker keeps dropping the publish as a duplicate of a
	// message that is not ours; the item is not replayed (execution).
	Suppressed
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Block:
		return "block"
	case Go:
		return "go"
	case Done:
		return "done"
	case Cancel:
		return "cancel"
	case Fail:
		return "fail"
	case Wait:
		return "wait"
	case Retry:
		return "retry"
	case Defer:
		return "defer"
	case Reconcile:
		return "reconcile"
	case Replayed:
		return "replayed"
	case Suppressed:
		return "suppressed"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Need names a fact a rule cannot decide without; the caller gathers it and
// asks again. Facts that cost a query or a request to another service are
// only gathered when a rule needs them.
type Need int

// Facts a rule may need.
const (
	NeedNothing      Need = iota
	NeedLedger            // Job.Ledger: whether the replay ledger holds the item's identity
	NeedRevalidation      // Job.Revalidation: the owning service's answer about the principal
	NeedCopies            // Copy.Copied or Copy.Behind of a window's late copies (Copy.Late): when they copied the subject
)

// Verdict is what a rule says about one item (or one request).
type Verdict struct {
	// Class is the item's replay class and Rule the index in Table.Rules of
	// the rule that gave it (-1: no rule matched and it fell to manual);
	// Classing says how (JudgeItem: the item type's class, the target
	// subject's, and which was stricter).
	Class    Class
	Rule     int
	Classing Classing
	// Outcome is what becomes of the item; Check names the check that
	// decided it ("" for Go) and Reason is the sentence shown to the
	// operator, naming the class.
	Outcome Outcome
	Check   string
	Reason  string
	// Needs is set when the rule cannot decide yet (Outcome is then Wait
	// and the caller gathers the fact and judges again).
	Needs Need
	// Item is the item judged (JudgeItem), so that the request's rules can
	// name it in their sentences.
	Item Item
	// Until is, for Defer and Retry, when the job may be tried again.
	Until time.Time
}

// The checks, by name: a Verdict's (or Decision's) Check says which one
// decided. Checks lists them all.
const (
	CheckNoPolicy = "no-policy" // no policy table is loaded

	// Item eligibility (JudgeItem).
	CheckReplayed      = "replayed"                // the dead letter's status is replayed
	CheckClosed        = "closed"                  // it was discarded or resolved
	CheckPurged        = "purged"                  // retention removed it
	CheckStatus        = "unknown-status"          // a status the rules do not know
	CheckInRequest     = "in-request"              // another open request holds it
	CheckNotHeld       = "not-held"                // at execution: the dead letter is no longer held by this request
	CheckPayloadChange = "payload-changed"         // at execution: the bytes to send are not the ones approved
	CheckLedger        = "ledger"                  // the ledger has its identity (every class but rebuildable)
	CheckNoSubject     = "no-subject"              // no original subject
	CheckNoMsgID       = "no-msg-id"               // no message id to replay under
	CheckPayloadGone   = "payload-gone"            // the payload was gone when it was captured
	CheckSubject       = "subject"                 // the subject allowlist refuses the target
	CheckNoOperationID = "no-operation-id"         // same_operation without an operation id
	CheckEdited        = "edited"                  // same_operation with an edited payload
	CheckPayloadHash   = "payload-hash"            // same_operation payload not shown unchanged
	CheckNoPrincipal   = "no-principal"            // revalidate without an original principal
	CheckErrorNever    = "error-class-never"       // the error class is never replayed (stale_version)
	CheckNeedsFix      = "error-class-fix"         // the error class replays only edited or after a fix (schema_invalid, permanent)
	CheckNoRevalidator = "no-revalidation-service" // revalidate on a deployment without REVALIDATE_SUBJECT, or (waits) on a worker without it
	CheckUnsendable    = "unsendable"              // a header NATS cannot send (or would send changed), or bigger than the server's max_payload
	CheckBrokerKeyText = "broker-key-text"         // a header the replay sends holds "Nats-" outside the broker's own keys: the broker could miss its message id
	CheckServiceTwin   = "service-dead-letter"     // a give-up advisory's dead letter of a failure the service dead-lettered itself
	// Review round 22b: an identity, target or authority header sent with
	// values that disagree (Item.Conflicting): never replayed under a guess.
	CheckConflictingHeader = "conflicting-header"

	// A selection becoming drafts (JudgeDraft).
	CheckMayRequest = "may-request" // the requester may not request the class in the tenant
	CheckBulk       = "bulk"        // more than one item of a class without bulk
	CheckBulkCap    = "bulk-cap"    // more items than the class's bulk cap

	// A request (JudgeRequest, Require, SubmitVerdict, the Check* of people).
	CheckNothingLeft   = "nothing-left"           // every item was left out
	CheckRequester     = "requester-unidentified" // the requester has no issuer and subject
	CheckActor         = "actor-unidentified"     // the acting person has none
	CheckPolicy        = "policy-version"         // the table changed since the request was made
	CheckReason        = "reason"                 // no reason given
	CheckNoItems       = "no-items"               // a request of no items
	CheckRate          = "rate"                   // a rate the class does not allow
	CheckIntent        = "intent"                 // no intent hash to bind approvals to
	CheckApprovals     = "approvals"              // waiting for approvals
	CheckConfirmation  = "confirmation"           // the typed confirmation is missing or wrong
	CheckOwnRequest    = "own-request"            // a requester approving their own request
	CheckIntentChanged = "intent-changed"         // an approval or rejection of an intent or version the request no longer has
	CheckNotRequester  = "not-requester"          // someone other than the requester cancels or edits
	CheckEditClass     = "edit-class"             // an edit of a class whose payload is never edited
	CheckEditReason    = "edit-reason"            // a payload edit without a reason
	CheckDraftExpired  = "draft-expired"          // a draft older than its time to live
	CheckReconcileNote = "reconciliation-note"    // an error class that needs reconciliation first, and no note

	// Execution (JudgeRun, JudgeJob).
	CheckCancelled        = "cancelled"               // the request was cancelled
	CheckRequestStatus    = "request-status"          // the request is not approved or running
	CheckExpired          = "approval-expired"        // approved, but not started within the expiry
	CheckAuthorityUnread  = "authority-unread"        // people's current rights could not be read
	CheckStartUnsettled   = "start-unsettled"         // expired, unless a worker's unrecorded publish started it: wait for its record
	CheckRequesterRights  = "requester-rights"        // the requester lost the right to request
	CheckApproverRights   = "approver-rights"         // an approver lost the right to approve
	CheckSameIdentity     = "same-identity"           // another job of this claim has the same identity
	CheckLedgerUnread     = "ledger-unread"           // the ledger could not be read
	CheckRevalidationNone = "revalidation-unanswered" // no answer about the principal
	CheckRevalidationDeny = "revalidation-denied"     // the owning service said no
	CheckMaybePublished   = "maybe-published"         // ended unpublished, but an earlier publish may have landed
	CheckUnsettled        = "identity-unsettled"      // another request's job of the identity may have landed: a person decides first
	CheckWorkerFailed     = "worker-failed"           // the worker failed (panicked) on the item MaxWorkerFailures times: a person looks at it

	// Publishing and its answer (JudgeWindow, JudgeAck).
	CheckWindow         = "duplicate-window"     // inside the target stream's duplicate window: deferred
	CheckWindowUnread   = "window-unread"        // the target stream's window could not be read
	CheckPastWindow     = "unknown-past-window"  // no PubAck, and the window no longer covers the first attempt
	CheckAckLost        = "ack-lost"             // no PubAck: retried under the same message id
	CheckNoStream       = "no-stream"            // no stream stores the subject
	CheckRefused        = "publish-refused"      // the client or the broker refuses the message as it is: never sent
	CheckNotSent        = "not-sent"             // the message did not leave the worker (or was not stored) this time
	CheckDuplicateKept  = "duplicate-not-ours"   // the broker kept another message under the id: deferred
	CheckSentAgain      = "sent-again"           // the broker keeps the message itself, published again since it was dead-lettered: it may have been applied
	CheckSuppressed     = "suppressed-duplicate" // deferred too often: the broker keeps dropping it
	CheckOwnDuplicate   = "duplicate-ours"       // the broker kept our own earlier publish: replayed
	CheckDedupeVolatile = "dedupe-not-durable"   // no PubAck, and the target's dedupe does not survive a restart: a person decides
	CheckNoInterest     = "no-interest"          // an interest stream none of whose consumers takes the subject: it would acknowledge and drop the publish
	CheckAckUnproven    = "ack-unproven"         // a first attempt's answer names a stream that does not store the subject: a person decides

	// A request's end (JudgeRequestOutcome), and what people do to a
	// running one (JudgeStop, JudgeReconcile).
	CheckProblems         = "done-with-problems" // not every item was replayed or skipped
	CheckStopReason       = "stop-reason"        // an emergency stop without a reason
	CheckStopConfirmation = "stop-confirmation"  // an emergency stop not confirmed
	CheckDecision         = "reconcile-decision" // not one of the decisions
	CheckDecisionNote     = "reconcile-note"     // a decision without what was checked
	CheckDecisionClosed   = "reconcile-closed"   // republish on a request that publishes nothing more
	// republish of an item whose request needed two approvers: a new request
	CheckRepublishTwoApprovers = "reconcile-two-approvers"

	// Review round C: what an edit is.
	CheckEditUnchanged = "edit-unchanged" // an "edit" that sends the bytes received, or the ones already there

	// Review round replay 8: an edit undone.
	CheckEditUndo = "edit-undo" // an edit undone in a request waiting for approval, whose item the rules refuse without it
)

// Checks returns the name of every check the rules apply.
func Checks() []string {
	return []string{
		CheckNoPolicy,
		CheckReplayed, CheckClosed, CheckPurged, CheckStatus, CheckInRequest, CheckNotHeld, CheckPayloadChange, CheckLedger, CheckNoSubject, CheckNoMsgID,
		CheckPayloadGone, CheckSubject, CheckNoOperationID, CheckEdited, CheckPayloadHash, CheckNoPrincipal,
		CheckErrorNever, CheckNeedsFix, CheckNoRevalidator, CheckUnsendable, CheckBrokerKeyText, CheckServiceTwin,
		CheckConflictingHeader,
		CheckMayRequest, CheckBulk, CheckBulkCap,
		CheckNothingLeft, CheckRequester, CheckActor, CheckPolicy, CheckReason, CheckNoItems, CheckRate, CheckIntent,
		CheckApprovals, CheckConfirmation, CheckOwnRequest, CheckIntentChanged, CheckNotRequester, CheckEditClass, CheckEditReason, CheckDraftExpired,
		CheckReconcileNote,
		CheckCancelled, CheckRequestStatus, CheckExpired, CheckStartUnsettled, CheckAuthorityUnread, CheckRequesterRights,
		CheckApproverRights, CheckSameIdentity, CheckLedgerUnread, CheckRevalidationNone, CheckRevalidationDeny, CheckMaybePublished, CheckUnsettled,
		CheckWorkerFailed,
		CheckWindow, CheckWindowUnread, CheckPastWindow, CheckAckLost, CheckNoStream, CheckRefused, CheckNotSent, CheckDuplicateKept, CheckSentAgain, CheckSuppressed, CheckOwnDuplicate,
		CheckDedupeVolatile, CheckNoInterest, CheckAckUnproven,
		CheckProblems, CheckStopReason, CheckStopConfirmation, CheckDecision, CheckDecisionNote, CheckDecisionClosed,
		CheckRepublishTwoApprovers,
		CheckEditUnchanged,
		CheckEditUndo,
	}
}

// prefix starts every sentence about an item: its class and, when that is
// not plain from its item type, why: an item type no rule matched is
// manual, and a target subject whose rule is stricter than the item type's
// decides.
func (v Verdict) prefix() string {
	switch c := v.Classing; {
	case c.ByLoop:
		return fmt.Sprintf("manual (it came back from %d replays of its message, and from generation %d only manual may replay it): ", c.Generation, c.Limit)
	case c.ByError:
		return fmt.Sprintf("%s (its error class %q replays at least as %s, stricter than %s): ", v.Class, c.ErrorClass, c.ErrorFloor, c.beforeError)
	case c.BySubject:
		return fmt.Sprintf("%s (the target subject %q is %s by rule %d, stricter than item type %q's %s): ",
			v.Class, v.Item.OriginalSubject, c.SubjectClass, c.SubjectRule+1, v.Item.ItemType, c.TypeClass)
	case v.Rule < 0:
		return fmt.Sprintf("manual (no rule matches item type %q): ", v.Item.ItemType)
	}
	return string(v.Class) + ": "
}

// with returns v decided by check with outcome o and a sentence that names
// the class.
func (v Verdict) with(o Outcome, check, format string, args ...any) Verdict {
	return v.plain(o, check, v.prefix()+fmt.Sprintf(format, args...))
}

// plain returns v decided by check with outcome o and the sentence reason.
func (v Verdict) plain(o Outcome, check, reason string) Verdict {
	v.Outcome, v.Check, v.Reason, v.Needs = o, check, reason, NeedNothing
	return v
}
