package web

import (
	"strconv"
	"strings"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/views"
)

// objectURL is the page of an audited object, "" when it has none: a dead
// letter, a replay request, an error group (its list in the entry's
// tenant). Lists of ids (refused selections) link nowhere, nor does an
// entry about a replay draft (draftObjectText): a request never submitted
// is its author's alone, its page not found for anyone else (and the
// attempt audited as denied; replay.Request.HiddenFrom), so the log's own
// link would lead a reader to a refusal. An entry that ended a request
// (replay.void, replay.cancel) does not say whether it was ever submitted
// and links all the same: for one that was not, the page answers anyone
// but its author not found.
func objectURL(e audit.Entry) string {
	if draftObjectText(e) != "" {
		return ""
	}
	switch e.ObjectType {
	case "dead_letter", "replay_request":
		n, err := strconv.ParseInt(e.ObjectID, 10, 64)
		if err != nil || n < 1 {
			return ""
		}
		if e.ObjectType == "dead_letter" {
			return deadLetterURL(n)
		}
		return "/replay/requests/" + strconv.FormatInt(n, 10)
	case "error_group":
		if fingerprintPattern.MatchString(e.ObjectID) {
			return listURL("group", e.ObjectID, "tenant", e.Tenant)
		}
	}
	return ""
}

// draftObjectText is the object of an entry about a replay draft (drafted,
// changed, expired) as plain text, "#12 (draft)", "" for any other entry.
// Whether the request was submitted since is not read: the entry is about
// the draft, and the request's later entries (replay.submit on) link it.
func draftObjectText(e audit.Entry) string {
	switch e.Action {
	case audit.ActionReplayDraft, audit.ActionReplayDraftChanged, audit.ActionReplayDraftExpired:
	default:
		return ""
	}
	n, err := strconv.ParseInt(e.ObjectID, 10, 64)
	if e.ObjectType != "replay_request" || err != nil || n < 1 {
		return ""
	}
	return "#" + strconv.FormatInt(n, 10) + " (draft)"
}

// messageURL lists the dead letters of an entry's message id. An id
// longer than an audit row holds is stored as its key (audit.MessageKey),
// which no dead letter's msg_id equals: its link is the audit log's
// Message filter in the entry's tenant, which compares keys (every entry
// about the message, each linking to its dead letter).
func messageURL(e audit.Entry) string {
	switch {
	case e.MessageID == "" || strings.ContainsAny(e.MessageID, "\n\r"):
		return ""
	case quarantine.IsBoundedKey(e.MessageID):
		return views.PathAudit + pairsQuery("message_id", e.MessageID, "tenant", e.Tenant)
	}
	return views.PathDeadLetters + pairsQuery("msg_id", e.MessageID, "tenant", e.Tenant)
}

// operationURL is the audit log's Operation id filter on an entry's
// operation id, in the entry's tenant (an operation id is a tenant's:
// the replay ledger keys it so), "" when it has none: every entry of the
// operation, under whichever message ids it was dead-lettered and
// replayed. The stored id (a long one's key, audit.OperationKey) finds
// them as the whole id does.
func operationURL(e audit.Entry) string {
	if e.OperationID == "" || strings.ContainsAny(e.OperationID, "\n\r") {
		return ""
	}
	return views.PathAudit + pairsQuery("operation_id", e.OperationID, "tenant", e.Tenant)
}
