package replaypolicy

import (
	"fmt"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine"
)

// Item is what the rules need to know about one dead letter: the facts the
// caller gathered. Zero facts are the ordinary case (nothing replayed yet,
// nothing refused), so a caller states what it found.
type Item struct {
	Tenant   string
	ItemType string
	// MsgID is the original Nats-Msg-Id, or the stable id derived at ingest
	// when the producer gave none (MsgIDDerived). Either way a replay
	// publishes under it.
	MsgID        string
	MsgIDDerived bool
	OperationID  string
	// Principal is who originally asked for the effect (Dlq-Principal).
	Principal       string
	OriginalSubject string
	// PayloadSHA256 is the hex SHA-256 of the payload a replay would send;
	// OriginalPayloadSHA256 is the one computed at ingest.
	PayloadSHA256         string
	OriginalPayloadSHA256 string
	// PayloadEdited is true when the requester replaced the payload (see
	// Edited: bytes equal to the original are no edit).
	PayloadEdited bool
	// PayloadUnavailable is true when the payload was gone from its stream
	// when the dead letter was captured.
	PayloadUnavailable bool
	// AlreadyReplayed is true when the replay ledger records a successful
	// replay of MsgID, and OperationReplayed when it records one of
	// OperationID (under any message id), by request ReplayedBy (0: not
	// known). A replay the item's own Dlq-Replay-Of chain explains (a
	// replay of one of its origins, which came back as this dead letter or
	// an origin of it) does not count: the item is what that replay left
	// undone, and replaying it is a new decision the generation limit
	// bounds.
	AlreadyReplayed   bool
	OperationReplayed bool
	ReplayedBy        int64
	// AppliedOnly: every such replay is a person's finding that its effect
	// happened ("applied", after an outcome nobody could know), none one
	// the broker confirmed (Ledger.AppliedOnly).
	AppliedOnly bool
	// ChainCut is the dead letter up the item's Dlq-Replay-Of chain that
	// retention removed (0: none, or the item names no origin): the chain
	// is known only up to it, so a replay it does not explain may be one of
	// an origin beyond it, the replay whose effect failed and came back as
	// this item. Such a replay is not taken as done: a person decides.
	ChainCut int64
	// ChainTwice is the dead letter up the item's Dlq-Replay-Of chain the
	// console sent more than one replay of (0: none): the item came back
	// from one of them, and which is not known, so a later one the ledger
	// holds may be the one whose effect failed and came back as this item.
	// As for ChainCut, such a replay is not taken as done: a person decides.
	ChainTwice int64
	// SubjectRefusal says why the original subject may not be published to
	// (the subject allowlist's answer), "" when it may.
	SubjectRefusal string
	// ServiceTwin is, for a dead letter captured from a give-up advisory,
	// the dead letter the service that gave up published itself of the
	// same failure (dlq.ServiceTwinOfD; 0: none): the service dead-lettered
	// the message with its own error class and then terminated it (or let
	// it reach MaxDeliver). This one is a second record of that failure and
	// is never replayed: a person replays the service's, or resolves this
	// one by hand.
	ServiceTwin int64
	// Conflicting are the headers of the dead-letter contract that name
	// the item's identity, target or authority which its dead letter
	// carried with values that disagree (flagged conflicting:<field> at
	// ingest: dlq.ConflictsOf), the first value stored: which one the
	// consumer's effect ran under is not known, so it is never replayed
	// under a guess (CheckConflictingHeader). nil: none.
	Conflicting []ConflictingHeader
	// Status is the dead letter's status (dlq.Status values: "quarantined",
	// "replay_requested", "replaying", "replay_failed", "replayed",
	// "discarded", "resolved", or "purged" for one retention removed); "" when
	// the caller does not know it.
	Status string
	// Request is the request being judged (0 at draft, where there is
	// none yet); HeldBy is the open request that holds the dead letter (0:
	// none). A dead letter is in at most one open request. HeldByStatus is
	// where HeldBy stands (a request status: "pending_approval",
	// "running", "done_with_problems"…; "" when the caller does not know):
	// it says how the dead letter is freed.
	Request      int64
	HeldBy       int64
	HeldByStatus string
	// ApprovedSHA256 is, at execution, the hex SHA-256 of the payload the
	// approved intent holds; PayloadSHA256 is then the hash of the bytes
	// about to be sent, and they must be equal.
	ApprovedSHA256 string

	// ErrorClass is why the consumer gave up (dlq error classes; "" is
	// unclassified) and DeadLetteredAt when the dead letter was stored.
	ErrorClass     string
	DeadLetteredAt time.Time
	// Generation is how many replays of the message came back as dead
	// letters before this one (0: a first failure).
	Generation int
	// FixedAt and FixRef are the latest fix recorded for the item type (or
	// the dead letter's error group) in the tenant: when it was in place
	// and its version or ticket; zero when none is.
	FixedAt time.Time
	FixRef  string
	// FixRecordedAt is when that fix marker was recorded (zero: unknown). A
	// fix counts as in place from the earlier of FixedAt and it: a marker
	// may not date a fix ahead of when it was said (FixedInPlace).
	FixRecordedAt time.Time
	// FixRecordedBy is who recorded that fix marker (zero: no fix). A fix
	// the requester recorded lifts the error class only with one approver
	// who is not them (FixedByRequester), as an edit does.
	FixRecordedBy quarantine.Actor
	// FixRecordedByNow is that identity as the directory has it now (zero:
	// not known), and FixRecordedByKnownAs each address the console has
	// seen it with (Request.KnownAs); FixedByRequester compares all of
	// them.
	FixRecordedByNow     quarantine.Actor
	FixRecordedByKnownAs []quarantine.Actor
	// Requester and RequesterNow are, at execution, the request's
	// requester as it recorded them and as the directory has them now,
	// and KnownAs its people's addresses (Run.KnownAs);
	// OthersApproved how many people other than the requester approved it
	// (Run's approvals, OthersApproved; -1: not known, the worker checking
	// no people). A fix the requester recorded needs one.
	Requester, RequesterNow quarantine.Actor
	KnownAs                 []quarantine.Actor
	OthersApproved          int
	// ReconciliationNote is, at execution, the request's note (what the
	// requester checked before replaying an item whose error class needs
	// reconciliation first).
	ReconciliationNote string
	// NoRevalidator says why no revalidation service can be asked on this
	// deployment ("" when one is configured).
	NoRevalidator string
	// Send is what the broker's protocol says of the message a replay
	// would publish (zero: nothing known against it).
	Send Send
}

// Send is what NATS says of the message a replay of an item would
// publish: a header it cannot encode, and its size against the server's
// max_payload.
type Send struct {
	// HasBadHeader reports a header whose name NATS cannot send
	// (SendableHeaderName); BadHeader is the first such name, "" for a
	// header of an empty name. A BadHeader other than "" counts as one
	// without HasBadHeader.
	HasBadHeader bool
	BadHeader    string
	// StatusHeader is the first header, on a replay with no payload, whose
	// name (any case) is one nats.go reads a server's status line into
	// (Status, Description): every JetStream consumer built on it takes
	// such a message for the server's word, not a message ("": none).
	StatusHeader string
	// AlteredHeader is the first header (the message, operation and
	// correlation ids included, under the names they are sent as) whose
	// value NATS would send with other bytes than the stored ones: the
	// client turns a CR or LF inside a value into a space, and trims the
	// blanks (space, tab, CR, LF) at either end of a value ("": none).
	// A reader trims those at its start only (nats.go, the server), so
	// blanks at the end of a forwarded header are what its consumers read
	// (an application's idempotency key, say), and at its start are not
	// (review round 36); an id is the identity the broker and downstream
	// dedupe key on as received, either end; a correlation id only ties
	// messages together for people, and a trimmed one reads as the same.
	AlteredHeader string
	// AlteredEdge says where the message or operation id that is
	// AlteredHeader has the blanks NATS trims: "start", "end", "start and
	// end", or EdgeAllBlank (the id is only blanks, and goes out empty);
	// "" when it is a line break inside the value that alters it.
	AlteredEdge string
	// NotText is the first of the message, operation and correlation ids
	// and the original subject (by the header name it is sent as, or
	// "the original subject") that was not valid UTF-8 text or held a NUL
	// when it was received: it is stored with U+FFFD in place of those
	// bytes, and a replay would send the stored text, not the original's
	// bytes ("": none).
	NotText string
	// BrokerKeyText is the first header a replay would send, by the name
	// it is sent under (a forwarded header's own, or Nats-Msg-Id,
	// Dlq-Operation-Id or Dlq-Correlation-Id for the ids), whose name or
	// value holds the text "Nats-", as spelled (HoldsBrokerKeyText),
	// but for the lines of the broker's keys the console sets itself: the
	// names Nats-Msg-Id and Nats-Expected-Stream, and the expected
	// stream's name, which is the operator's (the stream's config), not
	// the producer's. The message id's value counts when the producer gave
	// it (a derived id is the console's: the stream the message was
	// stored in, and where). "": none. Such text can make the broker's
	// search for its keys give up (BrokerKeyText), so the broker would not
	// see the message id and would keep no duplicate check for the publish.
	BrokerKeyText string
	// Reappeared reports that the dead letter was stored from a delivery
	// an ingester held past the time retention keeps a removed dead
	// letter's key (flag after_retention_key_trim): it may be one retention
	// removed after it was replayed, discarded or resolved, and nothing
	// says whether, so no replay sends it unseen.
	Reappeared bool
	// Unverified reports that the dead letter is a captured advisory whose
	// give-up the console could not verify (flag advisory_unverified: its
	// consumer was gone when it was ingested, or cannot have delivered
	// it): it may be forged, naming a message nobody failed on, so no
	// replay sends it.
	Unverified bool
	// NotWhole is the flag (dlq.NotWholeOf) of a dead letter that does not
	// hold its original as it could be sent again: its producer left a
	// part out (left_out:payload, left_out:headers, left_out:header_block)
	// or carried header names NATS cannot send (unsendable:header_name).
	// A replay would publish something else under the original's
	// identity, so none sends it. "": none.
	NotWhole string
	// Size is the message's size in bytes (payload and headers, the
	// replay's own too), PayloadSize its payload's part of it; MaxPayload
	// the largest message a replay may send (the server's max_payload, or
	// REPLAY_MAX_PAYLOAD below it; 0: unknown).
	Size, PayloadSize, MaxPayload int64
}

// ConflictingHeader is a header a dead letter carried with values that
// disagree (Item.Conflicting): Values are some of them as ingest read one
// (the first is the one stored; cut for a sentence), More how many others
// there are; no Values when the stored headers no longer show them.
type ConflictingHeader struct {
	Header string
	Values []string
	More   int
}

// conflictStakes says, by header, what a replay under the wrong one of
// its values gets wrong.
var conflictStakes = map[string]string{
	"Dlq-Original-Subject": "which subject the original went to is not known, and a replay to the wrong one is another effect, somewhere else",
	"Dlq-Original-Msg-Id": "which id the original went out under is not known, and a replay under the wrong one is another message to the target's duplicate window " +
		"and to downstream dedupe: its effect could happen twice",
	"Nats-Msg-Id": "which id the original went out under is not known, and a replay under the wrong one is another message to the target's duplicate window " +
		"and to downstream dedupe: its effect could happen twice",
	"Dlq-Operation-Id": "the console cannot know which one the consumer's effect ran under, and a replay under the wrong one is another operation to downstream dedupe: " +
		"the effect (an email, a charge) could happen twice",
	"Dlq-Principal": "the console cannot know who asked for the effect, and a replay that re-checks the wrong one (a gateway's service account " +
		"instead of the person) could pass a check the person would fail",
	"Dlq-Replay-Of": "which dead letter it came back from is not known, and its generation and what was replayed before it would be read from a guess",
}

// conflictReason is the reason an item with conflicting header c is
// blocked for: the header, its values, and what a guess gets wrong.
func conflictReason(c ConflictingHeader) string {
	said := "values that disagree (its flags say so; the stored headers no longer show them)"
	if len(c.Values) > 0 {
		q := make([]string, 0, len(c.Values)+1)
		for _, v := range c.Values {
			q = append(q, fmt.Sprintf("%q", v))
		}
		if c.More > 0 {
			q = append(q, fmt.Sprintf("%d more", c.More))
		}
		said = strings.Join(q, " and ") + ", which disagree"
	}
	stakes, ok := conflictStakes[c.Header]
	if !ok {
		stakes = "the console cannot know which one the consumer's effect ran under"
	}
	return fmt.Sprintf("the dead letter says %s %s: %s. It is stored under the first, but is never replayed under a guess; "+
		"find out from the consumer which one its effect ran under, and resolve it by hand (or have the producer re-publish it with one)", c.Header, said, stakes)
}

// EdgeAllBlank is Send.AlteredEdge of an id that is only blanks.
const EdgeAllBlank = "whole"

// edgeBlanks says in words where an id has the blanks NATS trims (a
// Send.AlteredEdge other than EdgeAllBlank).
func edgeBlanks(edge string) string {
	if edge == "start and end" {
		return "blanks at its start and end"
	}
	return "a blank at its " + edge
}

// JudgeSend says whether a message s can be published at all, in a
// sentence that does not name the class (JudgeItem adds it). It is pure: a header name NATS cannot send (it would be refused, or dropped
// from what was approved), a header value it would send changed (a line
// break inside it becomes a space, and a message or operation id loses
// the blanks at its ends: an id so changed is another identity to the
// JetStream duplicate window and to every consumer's dedupe, so the
// replay could repeat the effect), an id or original
// subject received as other bytes than the text stored (not valid UTF-8,
// or NUL: the replay would carry another identity, or go to another
// subject) and a message bigger than the server's max_payload never go,
// so they are refused when the item is judged, not retried when it is
// published (CheckUnsendable). Nor does a message a header of which holds
// the text "Nats-" outside the broker's own keys (Send.BrokerKeyText,
// CheckBrokerKeyText): the broker could miss its message id and store a
// retry of it twice, so it is for a person to resolve.
func JudgeSend(v Verdict, s Send) Verdict {
	return judgeSend(v, s, AtDraft)
}

// judgeSend is JudgeSend of an item judged at step at (JudgeItem): a
// message over the size limit is told what can bring it under then
// (oversize).
func judgeSend(v Verdict, s Send, at Step) Verdict {
	switch {
	case s.HasBadHeader && s.BadHeader == "":
		return v.plain(Block, CheckUnsendable, "a header with an empty name cannot be sent over NATS ("+headerNameRule+"); resolve it by hand")
	case s.HasBadHeader || s.BadHeader != "":
		return v.plain(Block, CheckUnsendable, fmt.Sprintf("header %q cannot be sent over NATS (%s); resolve it by hand", s.BadHeader, headerNameRule))
	case s.StatusHeader != "":
		return v.plain(Block, CheckUnsendable, fmt.Sprintf("header %q on a message with no payload is what NATS clients read a server's status into: "+
			"its consumers would take the replay for the server's word (a \"409\" ends their fetch), never for a message; resolve it by hand", s.StatusHeader))
	case s.AlteredHeader != "" && s.AlteredEdge == EdgeAllBlank:
		return v.plain(Block, CheckUnsendable, fmt.Sprintf("header %q is only blanks, which NATS trims away as it sends a header: the replay would go out with an empty %s, "+
			"not the original's (another identity to the target's duplicate window and to downstream dedupe); re-publish it from the producer, or resolve it by hand", s.AlteredHeader, s.AlteredHeader))
	case s.AlteredHeader != "" && s.AlteredEdge != "":
		return v.plain(Block, CheckUnsendable, fmt.Sprintf("header %q has %s, which NATS trims as it sends a header: the replay would go out under another id than the original's "+
			"(another identity to the target's duplicate window and to downstream dedupe); re-publish it from the producer, or resolve it by hand", s.AlteredHeader, edgeBlanks(s.AlteredEdge)))
	case s.AlteredHeader != "":
		return v.plain(Block, CheckUnsendable, fmt.Sprintf("header %q holds a line break inside its value, or blanks at its end, which NATS sends as a space or trims: "+
			"the replay would not carry the value its consumers read (for a message or operation id, another identity to downstream dedupe; for another header, "+
			"another value to whatever they key on, an idempotency key say); resolve it by hand", s.AlteredHeader))
	case s.NotText != "":
		return v.plain(Block, CheckUnsendable, fmt.Sprintf("%s was not valid UTF-8 text (or held a NUL) as received and is stored with replacement characters: "+
			"the replay would send other bytes than the original's (for a message or operation id, another identity to downstream dedupe; for the subject, "+
			"another subject); re-publish it from the producer, or resolve it by hand", s.NotText))
	case s.Unverified:
		return v.plain(Block, CheckUnsendable, "the give-up this dead letter was captured from could not be verified (flag advisory_unverified says why): "+
			"it may be forged, naming a message no consumer failed on, so no replay sends it; the message is still in its stream (while retention keeps it) "+
			"for whoever owns the consumer to redeliver, or re-publish it from the producer; resolve it by hand")
	case s.NotWhole != "":
		return v.plain(Block, CheckUnsendable, fmt.Sprintf("the dead letter does not hold its original whole, as it could be sent again (flag %s says what its producer could not send, and where the original lies): "+
			"a replay would publish something else under the original's identity; re-publish it from the producer, or resolve it by hand", s.NotWhole))
	case s.Reappeared:
		return v.plain(Block, CheckUnsendable, "this dead letter was stored from a delivery held past the time retention keeps a removed dead letter's key: "+
			"it may be one retention removed after it was replayed, discarded or resolved (its flags say so; look for an earlier dead letter of its message id); "+
			"re-publish it from the producer if it is still wanted, or resolve it by hand")
	case s.MaxPayload > 0 && s.Size > s.MaxPayload:
		return v.plain(Block, CheckUnsendable, fmt.Sprintf("the message would be %d bytes with its headers, more than the server's max_payload of %d bytes, so it cannot be published; %s",
			s.Size, s.MaxPayload, oversize(s, at, !neverEdited(v.Classing))))
	case s.BrokerKeyText != "":
		return v.plain(Block, CheckBrokerKeyText, brokerKeyTextReason(s.BrokerKeyText))
	}
	v.Outcome = Go
	return v
}

// higherLimit names the two limits a replay's size is held to.
const higherLimit = "a higher limit (REPLAY_MAX_PAYLOAD where it is set, and the NATS server's max_payload)"

// oversize says what an operator can do about a message s that is over
// its size limit, judged at step at (editable: its class lets its payload
// be edited). Headers alone at or over the limit: no edit helps, only a
// higher limit. At execution the item passed when it was requested, so
// the limit it is held to is lower now (lowered since, or a worker's
// REPLAY_MAX_PAYLOAD below the one that judged the request) and its
// request, approved, can no longer be edited: it goes again only on a new
// request. Before that an edit of its payload can bring it under.
func oversize(s Send, at Step, editable bool) string {
	headers := s.Size - s.PayloadSize
	switch {
	case headers >= s.MaxPayload:
		return fmt.Sprintf("its headers alone come to %d bytes (the replay's own included), so no edit of the payload brings it under: "+
			"it can go only under %s; otherwise resolve it by hand", headers, higherLimit)
	case at == AtExecution && editable:
		return "it was within the limit when it was requested, so the limit is lower now (lowered since, or this worker's REPLAY_MAX_PAYLOAD is below the one " +
			"that judged the request), and an approved request's payloads cannot be edited: request it again once the limit is back up, or request it again " +
			"with its payload edited down; or resolve it by hand"
	case at == AtExecution:
		return "it was within the limit when it was requested, so the limit is lower now (lowered since, or this worker's REPLAY_MAX_PAYLOAD is below the one " +
			"that judged the request), and a " + string(SameOperation) + " item is sent only with its original payload: request it again under " + higherLimit +
			"; or resolve it by hand"
	case editable:
		return "edit the payload down (possible until someone approves its request) or resolve it by hand"
	}
	return "a " + string(SameOperation) + " item is sent only with its original payload, so it can go only under " + higherLimit + "; otherwise resolve it by hand"
}

// Step is when an item is judged. The rules judge the same way at every
// step, except where a fact means something else then.
type Step int

// Steps of a replay at which items are judged (execution has JudgeRun and
// JudgeJob).
const (
	// AtDraft: a selection is being frozen into draft requests, so an item
	// that is replay_requested or replaying belongs to another request.
	AtDraft Step = iota
	// AtRequest: a request is submitted, approved or shown; its own items
	// are replay_requested by it once submitted.
	AtRequest
	// AtExecution: a worker is about to publish the item: its dead letter
	// must still be replay_requested (or replaying) and held by the
	// request, and the payload must be the approved one.
	AtExecution
)

// JudgeItem judges whether item may be part of a replay under table t at
// step at. It is pure: the same facts always give the same verdict. The
// item's class is the stricter of its item type's and its target
// subject's (Table.ClassOf).
//
// In order it finds: a missing table (Block); another request holding
// the dead letter (Block, naming it and how it is freed: heldElsewhere); the dead letter's status (replayed:
// Done; discarded, resolved or unknown: Block; replay_requested or
// replaying not held by the request judged: Block; at AtExecution,
// anything but replay_requested or replaying: Block); at AtExecution, a
// payload that is not the approved one (Block); an item of any class but
// rebuildable whose message id or operation id the ledger holds as
// replayed (replayedBefore: Done for dedupe and same_operation, Block for
// the stricter classes); no original subject, no message id, a payload
// gone at capture, a subject the tenant's replay subjects refuse, a
// give-up advisory's dead letter of a failure the service dead-lettered
// itself, a header of its identity, target or authority sent with values
// that disagree (Item.Conflicting: Block, whatever the class);
// then the rules of every class in the item's union (Classing.Has: a
// weaker class's rules are not dropped when a stricter one sets the class):
// same_operation needs an operation id and the payload unedited and equal
// to the one hashed at ingest, revalidate needs an original principal and
// a revalidation service (Item.NoRevalidator: the console's setting, at
// the draft, the submit and the approval; a worker judges its own with
// the job, JudgeRevalidation) (Block); then the error class's rule (judgeErrorClass: never, after a
// fix, a reconciliation note). Otherwise Go.
func JudgeItem(t *Table, item Item, at Step) Verdict {
	if t == nil {
		return Verdict{Rule: -1, Item: item}.plain(Block, CheckNoPolicy, "no replay policy is loaded, so nothing can be replayed")
	}
	c := t.Classify(Key{ItemType: item.ItemType, Subject: item.OriginalSubject, ErrorClass: item.ErrorClass, Generation: item.Generation})
	v := Verdict{Class: c.Class, Rule: c.Rule(), Classing: c, Item: item}
	if item.HeldBy != 0 && item.HeldBy != item.Request {
		return heldElsewhere(v, item)
	}
	switch item.Status {
	case "", "quarantined", "replay_failed":
		if at == AtExecution && item.Status != "" {
			return v.with(Block, CheckNotHeld, "the dead letter is %s now, no longer held by this request, so it is not published", strings.ReplaceAll(item.Status, "_", " "))
		}
	case "replay_requested", "replaying", "needs_reconciliation":
		switch {
		case at == AtExecution && item.HeldBy != item.Request:
			return v.with(Block, CheckNotHeld, "this request no longer holds the dead letter, so it is not published")
		case at == AtDraft || item.HeldBy != item.Request:
			return v.with(Block, CheckInRequest, "a replay of it is already requested")
		}
	case "replayed":
		return v.with(Done, CheckReplayed, "this item was already replayed successfully; it is skipped, not re-sent")
	case "discarded":
		return v.with(Block, CheckClosed, "this item was discarded, and a discarded item cannot be replayed")
	case "resolved":
		return v.with(Block, CheckClosed, "this item was resolved by hand, so it cannot be replayed")
	case "purged":
		return v.with(Block, CheckPurged, "this dead letter was removed by retention; nothing of it is left to replay")
	default:
		return v.with(Block, CheckStatus, "this item has status %q, which the replay policy does not know; refusing to replay it", item.Status)
	}
	if at == AtExecution && item.ApprovedSHA256 != "" && !strings.EqualFold(item.PayloadSHA256, item.ApprovedSHA256) {
		return v.with(Block, CheckPayloadChange, "the payload to send (SHA-256 %s) is not the one approved (%s), so it is not published; request again",
			short(item.PayloadSHA256), short(item.ApprovedSHA256))
	}
	switch {
	case c.OncePerIdentity() && (item.AlreadyReplayed || item.OperationReplayed) && item.Send.NotText == "": // a stored stand-in id may be another message's
		return replayedBefore(v, item)
	case strings.TrimSpace(item.OriginalSubject) == "":
		return v.with(Block, CheckNoSubject, "no original subject: cannot be replayed; resolve it by hand")
	case item.MsgID == "" && c.Has(Dedupe):
		return v.with(Block, CheckNoMsgID, "the original message id is mandatory for dedupe and this item has none; resolve it by hand")
	case item.MsgID == "":
		return v.with(Block, CheckNoMsgID, "no message id: a replay must reuse the original identity and this item has none; resolve it by hand")
	case item.PayloadUnavailable:
		return v.with(Block, CheckPayloadGone, "the payload was gone from its stream when it was captured, so there is nothing to send; resolve it by hand")
	case item.SubjectRefusal != "":
		return v.with(Block, CheckSubject, "%s", item.SubjectRefusal)
	case item.ServiceTwin != 0:
		return v.with(Block, CheckServiceTwin, "the service that gave up on this message dead-lettered it itself, as dead letter %d with its own error class, "+
			"and its consumer then gave it up too (terminated it, or let it reach MaxDeliver): this dead letter was captured from that give-up's advisory, "+
			"a second record of the same failure, so it is not replayed; judge dead letter %d, and resolve this one by hand", item.ServiceTwin, item.ServiceTwin)
	case len(item.Conflicting) > 0:
		return v.with(Block, CheckConflictingHeader, "%s", conflictReason(item.Conflicting[0]))
	}
	if sv := judgeSend(v, item.Send, at); sv.Outcome != Go {
		return v.with(Block, sv.Check, "%s", sv.Reason)
	}
	// A rule of the class no fix satisfies is judged before the error
	// class's, which a fix may: told only to record a fix, an on-call
	// recorded one (audited, for the whole item type) that changed
	// nothing for this item (review round 42).
	switch {
	case c.Has(SameOperation) && item.OperationID == "":
		return v.with(Block, CheckNoOperationID, "cannot guarantee idempotency without an operation id; resolve it by hand")
	case neverEdited(c) && item.PayloadEdited:
		return v.with(Block, CheckEdited, "the payload was edited, and only the same operation with its original payload may be replayed; resolve it by hand")
	case c.Has(SameOperation) && (item.OriginalPayloadSHA256 == "" || item.PayloadSHA256 == ""):
		return v.with(Block, CheckPayloadHash, "no payload hash to compare with the one taken at ingest, so the payload cannot be shown unchanged; resolve it by hand")
	case c.Has(SameOperation) && !strings.EqualFold(item.PayloadSHA256, item.OriginalPayloadSHA256):
		return v.with(Block, CheckPayloadHash, "the payload differs from the one received at ingest, and only the same operation with its original payload may be replayed; resolve it by hand")
	case c.Has(Revalidate) && item.Principal == "":
		return v.with(Block, CheckNoPrincipal, "no original principal (Dlq-Principal), so their authority cannot be re-checked; resolve it by hand")
	case c.Has(Revalidate) && item.NoRevalidator != "":
		return v.with(Block, CheckNoRevalidator, "%s, so the original principal's authority cannot be re-checked and this item cannot be replayed on this deployment", item.NoRevalidator)
	}
	if ev := judgeErrorClass(t, v, item, at); ev.Outcome != Go {
		return ev
	}
	v.Outcome = Go
	return v
}

// heldElsewhere is the verdict on an item whose dead letter another
// request holds (Item.HeldBy): blocked, with how it is freed (HeldFreedBy),
// which depends on where that request stands (Item.HeldByStatus). One that
// finished holds it only while its replay of it waits for a person (its
// outcome is not known: needs reconciliation); one cancelled or stopped,
// also while the worker that was publishing it records what came of it.
func heldElsewhere(v Verdict, item Item) Verdict {
	freed := HeldFreedBy(item.HeldBy, item.HeldByStatus, item.Tenant)
	switch {
	case item.HeldByStatus == "" || RequestOpen(item.HeldByStatus):
		return v.with(Block, CheckInRequest, "replay request %d already holds this dead letter, and a dead letter is in one open request at a time; %s", item.HeldBy, freed)
	case item.HeldByStatus == "cancelled":
		return v.with(Block, CheckInRequest, "replay request %d still holds this dead letter: it was cancelled or stopped while its replay of it was being published; %s", item.HeldBy, freed)
	}
	return v.with(Block, CheckInRequest, "replay request %d already holds this dead letter: it has finished, and its replay of it waits for a person; %s", item.HeldBy, freed)
}

// HeldFreedBy is the one statement of what frees a dead letter that replay
// request id (of tenant, in status: a request status, "" when not known)
// holds, named by the actions the request's page offers: one waiting for
// approval is rejected ("Reject request") or cancelled by its requester
// ("Cancel replay"); one approved or running finishes, or is stopped
// ("Emergency stop", which an approver need not be its requester to use;
// its requester may cancel it instead); one done with problems holds it
// only while a person settles its replay of it (an approver other than its
// requester, MayReconcile); one cancelled or stopped holds it only while
// the worker that was publishing it records what came of it (within its
// lease), and then only if a publish of it may have landed, until a person
// settles it. It is a clause to follow "; " or ":", no
// capital, no full stop: the item verdict (CheckInRequest), the submit
// conflict and the discard and resolve pages each write it after their
// own lead.
func HeldFreedBy(id int64, status, tenant string) string {
	switch status {
	case statusDraft, statusPendingApproval:
		return fmt.Sprintf("an approver of %s rejects it, or its requester cancels it, on request %d (Reject request, Cancel replay)", tenant, id)
	case statusApproved, statusRunning:
		return fmt.Sprintf("wait for it to finish, or an approver of %s stops it on request %d (Emergency stop; its requester may Cancel replay instead)", tenant, id)
	case "done_with_problems":
		return fmt.Sprintf("an approver of %s other than its requester settles whether its replay was applied, on request %d (Applied, Republish or Not applied)", tenant, id)
	case "cancelled":
		return fmt.Sprintf("it lets go once the worker that held it records what the broker answered (within the replay lease), unless a publish of it may have landed: "+
			"then an approver of %s other than its requester settles whether it was applied, on request %d (Applied or Not applied)", tenant, id)
	}
	return fmt.Sprintf("wait for request %d to finish, or have it ended on its page", id)
}

// replayedBefore is the verdict on an item whose message id or operation
// id the ledger holds as replayed (Item.AlreadyReplayed,
// Item.OperationReplayed): a dedupe or same_operation item is skipped
// (Done: it was replayed once, which is all its class promises); one of a
// stricter class is blocked, naming the request that replayed it, so that
// no second effect goes out without a person deciding it. When retention
// cut the item's chain (Item.ChainCut), that replay may be the one the
// item came back from: any class is blocked, for a person to check whether
// its effect happened, never skipped as done; so when an origin up its
// chain was replayed more than once (Item.ChainTwice). A replay by
// another tenant's request is blocked too: another tenant's dead letter
// may carry any message id (a forged one, or a message of this tenant's),
// and its replay neither shows this one's effect happened nor may make
// this tenant's dead letter "replayed" (review round 41).
func replayedBefore(v Verdict, item Item) Verdict {
	what := fmt.Sprintf("message id %q", item.MsgID)
	if !item.AlreadyReplayed {
		what = fmt.Sprintf("operation id %q", item.OperationID)
	}
	// done is what became of it: replayed, or, when no broker confirmed
	// any replay of it, applied as a person found.
	by := replayedBy(item.ReplayedBy)
	done, doneWell := "replayed"+by, "replayed successfully"+by
	if item.AppliedOnly {
		done = "applied, as a person found of its replay" + by + " whose outcome nobody could know (no broker confirmed a replay of it)"
		doneWell = done
	}
	if item.ChainCut != 0 {
		return v.with(Block, CheckLedger, "%s was already %s, and %s; resolve it by hand", what, done, chainCutBy(item.ChainCut))
	}
	if item.ChainTwice != 0 {
		return v.with(Block, CheckLedger, "%s was already %s, and %s; resolve it by hand", what, done, chainTwiceBy(item.ChainTwice))
	}
	if item.ReplayedBy == AnotherTenant {
		return v.with(Block, CheckLedger, "%s was already %s, %s", what, done, anotherTenantsReplay)
	}
	if v.Classing.skipsReplayed() {
		return v.with(Done, CheckLedger, "%s was already %s; the item is skipped, not re-sent", what, doneWell)
	}
	return v.with(Block, CheckLedger, "%s was already %s (the replay ledger holds it), and a %s item is not published twice: "+
		"if its effect did not happen, resolve it by hand", what, done, v.Class)
}

// judgeErrorClass applies the rule of the item's error class (Table.ErrorRule):
// never replayed (CheckErrorNever); replayed only with an edited payload or
// after a fix recorded later than the dead letter (CheckNeedsFix); and, at
// execution, only with the request's reconciliation note where the error
// class asks for one (CheckReconcileNote; the request's own rules ask for it
// at submit, JudgeRequest). v is the item's verdict so far; Go when the
// error class lets it go.
func judgeErrorClass(t *Table, v Verdict, item Item, at Step) Verdict {
	ec := item.ErrorClass
	if ec == "" {
		ec = ErrUnclassified
	}
	r := t.ErrorRule(ec)
	switch {
	case r.Replay == Never:
		return v.with(Block, CheckErrorNever, "error class %q is never replayed by this policy%s; resolve it by hand", ec, neverWhy(ec))
	case r.Replay == AfterFix && !item.Edited() && !fixedAfter(item):
		edit := "edit its payload, or "
		if neverEdited(v.Classing) {
			edit = "" // its class replays the payload unchanged (review round 41)
		}
		return v.with(Block, CheckNeedsFix, "error class %q replays only after a fix: %srecord a fix of item type %q (or of its error group) "+
			"in place after it was dead-lettered (%s); %s", ec, edit, item.ItemType, formatTime(item.DeadLetteredAt), latestFix(item))
	case at == AtExecution && item.OthersApproved == 0 && FixedByRequester(t, item, item.KnownAs, item.Requester, item.RequesterNow):
		return v.with(Block, CheckNeedsFix, "error class %q replays here only on a fix of item type %q that the requester recorded, and nobody else "+
			"approved the request; request again", ec, item.ItemType)
	case at == AtExecution && r.ReconciliationNote && strings.TrimSpace(item.ReconciliationNote) == "":
		return v.with(Block, CheckReconcileNote, "error class %q needs reconciliation first, and the request has no reconciliation note; request again with one", ec)
	}
	v.Outcome = Go
	return v
}

// FixedByRequester reports whether what lets item go past its error class
// (an after_fix class: schema_invalid, permanent) under table t is a fix
// marker recorded by the request's requester: no edit, a fix in place
// after the dead letter, recorded by someone who may be them (SamePerson
// of any of their names: the requester as the request recorded them,
// requesterNow as the directory has them now, and every address in
// knownAs the console has seen their identity with, Request.KnownAs; the
// marker's recorder as it recorded them, as the directory has them now,
// Item.FixRecordedByNow, and under Item.FixRecordedByKnownAs). Such a fix
// counts only with one approver who is not the
// requester, the standing an edited payload has: nobody lifts a refused
// error class on their own word alone. The latest fix is the one read:
// an earlier one recorded by someone else does not count instead.
func FixedByRequester(t *Table, item Item, knownAs []quarantine.Actor, requester, requesterNow quarantine.Actor) bool {
	return t.FixLetsGo(item.ErrorClass) && !item.Edited() && fixedAfter(item) &&
		personOf(item.FixRecordedByKnownAs, item.FixRecordedBy, item.FixRecordedByNow).mayBe(personOf(knownAs, requester, requesterNow))
}

// Edited reports whether the payload a replay of item would send is an
// edit: the requester replaced it, and its hash differs from the one taken
// at ingest (the same bytes again are no edit).
func (item Item) Edited() bool {
	return item.PayloadEdited && !strings.EqualFold(item.PayloadSHA256, item.OriginalPayloadSHA256)
}

// FixedInPlace is when the item's latest fix counts as in place: the
// earlier of the time its marker gives and the time the marker was
// recorded (a marker dated ahead counts from when it was said); zero when
// no fix is recorded.
func (item Item) FixedInPlace() time.Time {
	return fixInPlace(item.FixedAt, item.FixRecordedAt)
}

// fixInPlace is when a fix counts as in place: the earlier of the time
// its marker gives (fixedAt) and when the marker was recorded (recordedAt,
// zero: not known).
func fixInPlace(fixedAt, recordedAt time.Time) time.Time {
	if !recordedAt.IsZero() && recordedAt.Before(fixedAt) {
		return recordedAt
	}
	return fixedAt
}

// FixCovers reports whether a fix whose marker gives fixedAt and was
// recorded at recordedAt was in place (fixInPlace) after a dead letter
// stored at deadLetteredAt (an unknown time never is): the rule
// CheckNeedsFix judges an item's latest fix by (fixedAfter), and what the
// dead letter page says of each fix.
func FixCovers(fixedAt, recordedAt, deadLetteredAt time.Time) bool {
	at := fixInPlace(fixedAt, recordedAt)
	return !at.IsZero() && !deadLetteredAt.IsZero() && at.After(deadLetteredAt)
}

// fixedAfter reports whether the item's latest fix covers it (FixCovers).
func fixedAfter(item Item) bool {
	return FixCovers(item.FixedAt, item.FixRecordedAt, item.DeadLetteredAt)
}

// latestFix says what fix is recorded, for the sentence of CheckNeedsFix.
func latestFix(item Item) string {
	if item.FixedAt.IsZero() {
		return "no fix is recorded"
	}
	return fmt.Sprintf("the latest fix recorded (%q, in place at %s) is older than it", item.FixRef, formatTime(item.FixedInPlace()))
}

// neverWhy is the seeds' reason an error class is never replayed, when
// there is one to give.
func neverWhy(ec string) string {
	switch ec {
	case ErrStaleVersion:
		return ": replaying an older version over a newer one undoes it; reload the current state and apply what is still needed"
	case ErrUnreadable:
		return " (its producer's Dlq-Error-Class could not be read)"
	}
	return ""
}

// formatTime writes an instant the way the console shows them; "an unknown
// time" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// short is the first 12 hex digits of a hash, for sentences.
func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// JudgeDraft applies the rules of a selection to the verdicts (in order) of
// its items of one class in one tenant, judged AtDraft, and returns the
// final verdicts: when the requester may not request the class there
// (mayRequest false), every item is blocked; otherwise the items still
// going are blocked together when there are more than one of a class
// without bulk, or more than the bulk cap. Bulk and its cap are those the
// submit will hold the request to: the strictest of every class the going
// items are classed by (Table.UnionKnobs, as JudgeRequest), so that a draft
// never lets go what its submit refuses.
func JudgeDraft(t *Table, class Class, tenant string, mayRequest bool, verdicts []Verdict) []Verdict {
	out := append([]Verdict(nil), verdicts...)
	if t == nil {
		return out
	}
	if !mayRequest {
		for i := range out {
			out[i] = out[i].plain(Block, CheckMayRequest, fmt.Sprintf("you may not request %s replays in tenant %s", class, tenant))
		}
		return out
	}
	union := []Class{class}
	going := 0
	for _, v := range out {
		if v.Outcome == Go {
			going++
			union = append(union, v.Classing.Union...)
		}
	}
	k := t.UnionKnobs(union...)
	var check, why string
	switch {
	case going > 1 && !k.Bulk:
		check, why = CheckBulk, noBulkWhy(class, union)
	case going > k.BulkCap && k.BulkCap > 0:
		check, why = CheckBulkCap, fmt.Sprintf("%s allows at most %d items in one request; this selection has %d", classNames(class, union), k.BulkCap, going)
	default:
		return out
	}
	for i := range out {
		if out[i].Outcome == Go {
			out[i] = out[i].plain(Block, check, why)
		}
	}
	return out
}

// ListedOverCap is how many dead letters of a class over its bulk cap a
// selection may still hold: a draft lists each of them with why it cannot
// go. A larger group is refused before anything of it is read.
const ListedOverCap = 1000

// JudgeSelection says whether n dead letters of class in tenant may be
// drafted at all, before anything but their tenant, item type and subject
// is read: at most the class's bulk cap, or ListedOverCap, whichever is
// more (JudgeDraft then blocks, one by one, what is over the cap).
func JudgeSelection(t *Table, class Class, tenant string, n int) Verdict {
	v := Verdict{Class: class, Rule: -1, Outcome: Go}
	if t == nil {
		return v
	}
	k, _ := t.Knobs(class)
	if n > max(k.BulkCap, ListedOverCap) {
		return v.plain(Block, CheckBulkCap, fmt.Sprintf("the selection holds %d %s dead letters of tenant %s, and one %s request takes at most %d: narrow it",
			n, class, tenant, class, k.BulkCap))
	}
	return v
}

// chainTwiceBy says why a replay the ledger holds is not taken as done
// when dead letter id, up the item's chain, was replayed more than once
// (Item.ChainTwice, Ledger.ChainTwice).
func chainTwiceBy(id int64) string {
	return fmt.Sprintf("dead letter %d up this one's Dlq-Replay-Of chain was replayed more than once, so whether that replay is the one "+
		"that failed and came back as this dead letter (its effect undone) is not known: it is not skipped as done", id)
}

// chainCutBy says why a replay the ledger holds may be the one an item came
// back from: retention removed dead letter id up its Dlq-Replay-Of chain,
// so the chain is not known beyond it.
func chainCutBy(id int64) string {
	return fmt.Sprintf("retention removed dead letter %d up this one's Dlq-Replay-Of chain, so whether that replay is the one "+
		"that failed and came back as this dead letter (its effect undone) is not known: it is not skipped as done", id)
}
