package replaypolicy

import (
	"fmt"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine"
)

// Separation of duties: who may act on a request besides what their roles
// allow. The route's permission (authz) is checked before these; these say
// what no role can give.

// MayApprove says whether actor may approve req: never its requester, by
// any of their addresses (the same issuer and subject is the same person).
func MayApprove(req Request, actor quarantine.Actor) Verdict {
	v := Verdict{Class: req.Class, Rule: -1, Outcome: Go}
	if actor.SameAs(req.Requester) {
		return v.plain(Block, CheckOwnRequest, "you cannot approve your own request")
	}
	return v
}

// MayCancel says whether actor may cancel a request of requester: only the
// requester may.
func MayCancel(requester, actor quarantine.Actor) Verdict {
	return requesterOnly(requester, actor, "only the requester can cancel a request")
}

// MaySubmit says whether actor may see and submit a selection frozen by
// requester: only the requester may; to anyone else it does not exist.
func MaySubmit(requester, actor quarantine.Actor) Verdict {
	return requesterOnly(requester, actor, "only the requester can see and submit their selection")
}

// MayEditPayload says whether actor may edit the payload of an item of a
// request of class made by requester: only the requester, and never for
// same_operation, whose operation must be repeated exactly.
func MayEditPayload(class Class, requester, actor quarantine.Actor) Verdict {
	v := requesterOnly(requester, actor, "only the requester can edit a request")
	if v.Outcome == Go && class == SameOperation {
		return v.plain(Block, CheckEditClass, "same_operation payloads cannot be edited: the operation must be repeated exactly")
	}
	return v
}

// JudgeEdit says whether actor may replace a payload of a request of class
// made by requester, giving reason: MayEditPayload, and the edit needs a
// reason (approvers and auditors read it beside the change). An edit makes
// the request need one approver whatever its class (JudgeRequest).
func JudgeEdit(class Class, requester, actor quarantine.Actor, reason string) Verdict {
	v := MayEditPayload(class, requester, actor)
	if v.Outcome == Go && strings.TrimSpace(reason) == "" {
		return v.plain(Block, CheckEditReason, "say why the payload is changed: the approver reads it beside the change")
	}
	return v
}

// JudgeDraftAge says whether a draft made at created may still be
// submitted at now, when drafts live for ttl (0: forever): a selection is
// frozen for review, not kept around to be submitted whenever.
func JudgeDraftAge(created, now time.Time, ttl time.Duration) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	if ttl > 0 && !now.Before(created.Add(ttl)) {
		return v.plain(Block, CheckDraftExpired, fmt.Sprintf("this selection expired %s after it was made; select again", formatDuration(ttl)))
	}
	return v
}

// requesterOnly lets only the requester go; anyone else is blocked with
// reason.
func requesterOnly(requester, actor quarantine.Actor, reason string) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	if !requester.SameAs(actor) {
		return v.plain(Block, CheckNotRequester, reason)
	}
	return v
}
