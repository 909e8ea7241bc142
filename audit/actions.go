package audit

import "strings"

// Actions an entry records, as dotted verbs. This file is the one list of
// them: the audit log's Action filter offers Actions, and
// TestAuditActionFilterListsAllActions fails when code anywhere in the
// module spells an action of a known family that is not here.
const (
	ActionLogin          = "auth.login"
	ActionLogout         = "auth.logout"
	ActionSessionEnd     = "auth.session_end"
	ActionSessionsRevoke = "auth.sessions_revoke"
	// ActionIdentityChange: a refresh at the identity provider changed what
	// grants a person roles (groups, email, whether it is verified).
	ActionIdentityChange = "auth.identity_change"

	ActionDenied     = "authz.denied"
	ActionCSRFDenied = "csrf.denied"

	// ActionIdentityRekeyed: `console migrate` wrote again the mailbox key
	// of kept addresses (identity_addresses.mailbox, by which separation
	// of duties links an identity's addresses to other identities) where
	// this release reads an address otherwise than the one that kept it
	// (migrations.fillMailboxes): one entry per transaction that changed
	// any, naming how many and the identities newly linked.
	ActionIdentityRekeyed = "identity.mailboxes.rekeyed"

	ActionBindingAdd    = "binding.add"
	ActionBindingDelete = "binding.delete"
	// ActionBindingUnmatched: the console stopped matching a binding (an
	// email binding whose address is not ASCII: migration 0050, recorded
	// by migration 0052).
	ActionBindingUnmatched = "binding.unmatched"

	ActionExport = "audit.export"
	ActionVerify = "audit.verify"
	// ActionCheckpointRefused: Record found a checkpoint at the head whose
	// signature does not verify with the console's key, and signed past it.
	ActionCheckpointRefused = "audit.checkpoint_refused"

	ActionDeadLetterDownload = "deadletter.download"
	ActionDeadLetterDiscard  = "deadletter.discard"
	ActionDeadLetterResolve  = "deadletter.resolve"
	ActionDeadLetterFix      = "deadletter.fix"

	ActionUserSettings = "user.settings"

	ActionGroupSnooze = "group.snooze"
	ActionGroupWake   = "group.wake"
	ActionGroupAssign = "group.assign"
	ActionGroupNote   = "group.note"

	ActionReplayDraft        = "replay.draft"
	ActionReplayDraftChanged = "replay.draft.changed"
	ActionReplayDraftExpired = "replay.draft_expired"
	ActionReplaySelection    = "replay.selection"
	ActionReplaySubmit       = "replay.submit"
	ActionReplayRequest      = "replay.request"
	ActionReplayApprove      = "replay.approve"
	// ActionReplayApprovalVoid: an earlier approval stopped counting, its
	// approver having lost the right to approve (asked when another
	// approval would complete the request).
	ActionReplayApprovalVoid = "replay.approval.voided"
	ActionReplayApproved     = "replay.approved"
	// ActionReplayRunning: a request began to run, a publish of it having
	// maybe landed (by the worker that recorded it), or runs again, a
	// person having had an item of it published again.
	ActionReplayRunning      = "replay.running"
	ActionReplayReject       = "replay.reject"
	ActionReplayCancel       = "replay.cancel"
	ActionReplayEditPayload  = "replay.edit_payload"
	ActionReplayVoid         = "replay.void"
	ActionReplayDone         = "replay.done"
	ActionReplayDoneProblems = "replay.done_with_problems"
	ActionReplayStop         = "replay.stop"
	// ActionReplayPolicy: a process made its replay policy table the
	// active one (the version every process judges by).
	ActionReplayPolicy = "replay.policy_activated"
	// ActionReplayPolicyRollback: an operator let a replaced replay policy
	// version be made active again (console policy rollback).
	ActionReplayPolicyRollback = "replay.policy_rollback_allowed"

	// ActionRetentionPurge: a retention run removed dead letters (one
	// entry outside any tenant, naming every tenant and its counts);
	// ActionRetentionPurgeTenant: what that run removed of one tenant's
	// (one entry in that tenant, naming no other); ActionRetentionTrimKeys:
	// the keeper let go of kept source keys whose messages left their
	// stream.
	ActionRetentionPurge       = "retention.purge"
	ActionRetentionPurgeTenant = "retention.purge.tenant"
	ActionRetentionTrimKeys    = "retention.trim_keys"
	// ActionRetentionTerms: a process made its policy file's retention
	// terms the active ones; ActionRetentionTermsRollback: an operator let
	// replaced terms be made active again (console policy rollback).
	ActionRetentionTerms         = "retention.terms_activated"
	ActionRetentionTermsRollback = "retention.terms_rollback_allowed"

	// ActionReplayItemWorkerFailed: a replay worker failed (panicked) on
	// an item's job. The rows of a job are its count of failures: at
	// replaypolicy.MaxWorkerFailures the job ends for a person
	// (replaypolicy.JudgeWorkerFailures).
	ActionReplayItemWorkerFailed = ReplayItemPrefix + "worker_failed"

	// ReplayItemPrefix starts the actions recorded per item of a replay
	// request: "replay.item.requested", "replay.item.approved", the
	// worker's "replay.item.<job state>" (dlq/replay checks that every job
	// state it records is listed in Actions), and, when a request ends
	// before its item's job did (or had one) and lets go of its dead
	// letter, "replay.item.rejected", "replay.item.cancelled" (by its
	// requester, or stopped) or "replay.item.voided".
	ReplayItemPrefix = "replay.item."
)

// actions are the families of Actions in the order the filter shows them,
// each family's actions in the order a reader meets them.
var actions = [][]string{
	{ActionLogin, ActionLogout, ActionIdentityChange, ActionSessionEnd, ActionSessionsRevoke},
	{ActionIdentityRekeyed},
	{ActionDenied},
	{ActionCSRFDenied},
	{ActionBindingAdd, ActionBindingDelete, ActionBindingUnmatched},
	{ActionUserSettings},
	{ActionExport, ActionVerify, ActionCheckpointRefused},
	{ActionDeadLetterDownload, ActionDeadLetterDiscard, ActionDeadLetterResolve, ActionDeadLetterFix},
	{ActionGroupSnooze, ActionGroupWake, ActionGroupAssign, ActionGroupNote},
	{ActionReplayDraft, ActionReplayDraftChanged, ActionReplayDraftExpired, ActionReplaySelection, ActionReplaySubmit,
		ActionReplayRequest, ActionReplayApprove, ActionReplayApprovalVoid, ActionReplayApproved, ActionReplayRunning, ActionReplayReject, ActionReplayCancel,
		ActionReplayEditPayload, ActionReplayVoid, ActionReplayStop, ActionReplayDone, ActionReplayDoneProblems, ActionReplayPolicy,
		ActionReplayPolicyRollback, ReplayItemPrefix + "requested", ReplayItemPrefix + "approved",
		ReplayItemPrefix + "deferred", ReplayItemPrefix + "replayed", ReplayItemPrefix + "suppressed_duplicate",
		ReplayItemPrefix + "skipped", ReplayItemPrefix + "blocked", ReplayItemPrefix + "unknown",
		ReplayItemPrefix + "needs_reconciliation", ReplayItemPrefix + "reconciled", ReplayItemPrefix + "cancelled",
		ReplayItemPrefix + "rejected", ReplayItemPrefix + "voided", ActionReplayItemWorkerFailed,
		// "published" and "failed": job states before migration 0010, still
		// in older entries of the log.
		ReplayItemPrefix + "published", ReplayItemPrefix + "failed"},
	{ActionRetentionPurgeTenant, ActionRetentionPurge, ActionRetentionTrimKeys, ActionRetentionTerms, ActionRetentionTermsRollback},
}

// ActionFamily is the actions sharing the word before the first dot.
type ActionFamily struct {
	Name    string // "replay"
	Actions []string
}

// Families returns every action, by family, in the order of the filter.
func Families() []ActionFamily {
	out := make([]ActionFamily, len(actions))
	for i, f := range actions {
		out[i] = ActionFamily{Name: Family(f[0]), Actions: append([]string(nil), f...)}
	}
	return out
}

// Actions returns every action the console records, family by family.
func Actions() []string {
	var out []string
	for _, f := range actions {
		out = append(out, f...)
	}
	return out
}

// Family is the family of an action: the word before its first dot.
func Family(action string) string {
	f, _, _ := strings.Cut(action, ".")
	return f
}

// KnownAction reports whether action is one of Actions.
func KnownAction(action string) bool {
	for _, f := range actions {
		for _, a := range f {
			if a == action {
				return true
			}
		}
	}
	return false
}

// FamilyActions returns the actions of a family ("replay"), nil for an
// unknown family. The filter's "replay.*" choice selects these.
func FamilyActions(family string) []string {
	for _, f := range Families() {
		if f.Name == family {
			return f.Actions
		}
	}
	return nil
}
