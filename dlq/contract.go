package dlq

import (
	"slices"
	"strings"
	"unicode"
)

// Header names of the dead-letter contract (docs/header-contract.md). Every
// other header of the original message is kept as it was and re-sent on
// replay.
const (
	HeaderOriginalSubject = "Dlq-Original-Subject" // required for replay
	HeaderOriginalMsgID   = "Dlq-Original-Msg-Id"  // the original Nats-Msg-Id
	HeaderOperationID     = "Dlq-Operation-Id"
	HeaderTenant          = "Dlq-Tenant"
	HeaderItemType        = "Dlq-Item-Type"
	HeaderError           = "Dlq-Error"
	HeaderErrorClass      = "Dlq-Error-Class"
	HeaderStack           = "Dlq-Stack"
	HeaderAttempts        = "Dlq-Attempts"
	HeaderFirstFailedAt   = "Dlq-First-Failed-At"
	HeaderLastFailedAt    = "Dlq-Last-Failed-At"
	HeaderConsumer        = "Dlq-Consumer"
	HeaderCorrelationID   = "Dlq-Correlation-Id"
	HeaderPrincipal       = "Dlq-Principal"

	// HeaderNatsMsgID is JetStream's deduplication header.
	HeaderNatsMsgID = "Nats-Msg-Id"

	// HeaderReplayOf is what the console adds to a message it replays:
	// the id of the dead letter replayed. A consumer that gives up on the
	// replayed message dead-letters it with this header (renamed
	// Upstream-Dlq-Replay-Of by the producer helper), and ingest links the
	// new dead letter to its origin.
	HeaderReplayOf = "Dlq-Replay-Of"
	// HeaderReplayRequest is the id of the replay request that sent a
	// replayed message.
	HeaderReplayRequest = "Dlq-Replay-Request"

	// The producer helper's word on an original it could not carry as it
	// was (NewMessage, Publish; docs/header-contract.md, "What does not
	// fit"). HeaderUnsendable holds, in base64, a header block of the
	// original's headers whose names NATS clients refuse to publish
	// (replaypolicy.SendableHeaderName); HeaderCut names a header cut to
	// fit and the length in bytes of its whole text ("Dlq-Stack 183004");
	// HeaderLeftOut names a part of the original the dead letter lacks
	// (leftOutParts), why, and where the original lies.
	HeaderUnsendable = "Dlq-Unsendable-Headers"
	HeaderCut        = "Dlq-Cut"
	HeaderLeftOut    = "Dlq-Left-Out"
)

// ErrorClass says why a consumer gave up on a message.
type ErrorClass string

// The classes a producer may send in Dlq-Error-Class, and the two the
// ingester assigns to captured advisories.
const (
	ClassTransient     ErrorClass = "transient"
	ClassPermanent     ErrorClass = "permanent"
	ClassSchemaInvalid ErrorClass = "schema_invalid"
	ClassStaleVersion  ErrorClass = "stale_version"
	ClassUnknownEffect ErrorClass = "unknown_effect"
	ClassPolicy        ErrorClass = "policy"

	ClassMaxDeliveries ErrorClass = "max_deliveries" // MAX_DELIVERIES advisory
	ClassTerminated    ErrorClass = "terminated"     // MSG_TERMINATED advisory
	ClassUnclassified  ErrorClass = "unclassified"   // header absent or not one of the above
	// ClassUnreadable is how the replay rules judge a dead letter whose
	// Dlq-Error-Class ingest could not read (stored as unclassified,
	// flagged FlagUnreadableErrorClass), or that named several classes
	// that disagree: it may have meant a class that is never replayed, or
	// only after reconciliation.
	ClassUnreadable ErrorClass = "unreadable"
)

// FlagUnreadableErrorClass flags a dead letter whose Dlq-Error-Class is
// none of ProducerClasses in any spelling (readErrorClass), or whose
// several Dlq-Error-Class values name different classes
// (checkErrorClasses).
const FlagUnreadableErrorClass = "invalid:error_class"

// UnreadableErrorClass returns the error class the replay rules judge a
// dead letter of stored class c and flags by: ClassUnreadable when ingest
// could not read its Dlq-Error-Class, else c.
func UnreadableErrorClass(c ErrorClass, flags []string) ErrorClass {
	if slices.Contains(flags, FlagUnreadableErrorClass) {
		return ClassUnreadable
	}
	return c
}

// JudgedErrorClassOfD is UnreadableErrorClass in SQL, of the dead letter
// aliased d (empty when there is none: a left join found nothing).
const JudgedErrorClassOfD = `CASE WHEN '` + FlagUnreadableErrorClass + `' = ANY(d.flags) THEN '` + string(ClassUnreadable) +
	`' ELSE coalesce(d.error_class, '') END`

// ServiceTwinOfD is, in SQL, the dead letter a service published itself
// (Publish, source kind dlq) of the failure that the dead letter aliased d
// was captured from a give-up advisory of: 0 when d is not an advisory's
// (or is NULL: a left join found none) or none is stored. A service that
// dead-letters a message and then terminates it, rather than acking it,
// on a watched stream raises MSG_TERMINATED, which the console captures as
// a dead letter of its own: one failure, two dead letters, the advisory's
// judged by class terminated (its item class decides) whatever class the
// service gave its own. Both name the original alike: its tenant, its
// message id (its Nats-Msg-Id, or the id Publish and ParseAdvisory both
// derive from where and when its stream stored it), its subject, and the
// replay it came back from (replay_of, which linkReplays links alike for
// both); the original's stream and sequence are the advisory's alone (a
// dead letter Publish made does not carry them). It is read when the
// rules judge d (replaypolicy.Item.ServiceTwin, which blocks it), in every
// query that judges, so it holds whichever of the two was stored first
// and no row is changed at ingest. For an advisory's dead letter only: one
// probe of dead_letters_msg_id_idx in each partition.
const ServiceTwinOfD = `CASE WHEN d.source_kind = '` + SourceAdvisory + `' THEN coalesce((SELECT t.id FROM dead_letters t
        WHERE left(t.msg_id, 256) = left(d.msg_id, 256) AND t.msg_id = d.msg_id AND t.tenant = d.tenant
          AND t.original_subject = d.original_subject AND t.source_kind = '` + SourceDLQ + `'
          AND t.replay_of IS NOT DISTINCT FROM d.replay_of -- a replay that failed again is another failure
        ORDER BY t.id LIMIT 1), 0) ELSE 0 END`

// readErrorClass reads a Dlq-Error-Class spelled otherwise than the
// contract does (STALE_VERSION, stale-version, StaleVersion, " policy "):
// the producer class, or unclassified, whose name it is once case,
// separators (_ - . and spaces) and surrounding space are set aside.
func readErrorClass(sent string) (ErrorClass, bool) {
	fold := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch r {
			case '_', '-', '.', ' ', '\t':
				return -1
			}
			return unicode.ToLower(r)
		}, s)
	}
	f := fold(sent)
	for _, c := range append(slices.Clone(ProducerClasses), ClassUnclassified) {
		if f == fold(string(c)) {
			return c, true
		}
	}
	return "", false
}

// ProducerClasses are the values Dlq-Error-Class accepts.
var ProducerClasses = []ErrorClass{
	ClassTransient, ClassPermanent, ClassSchemaInvalid, ClassStaleVersion, ClassUnknownEffect, ClassPolicy,
}

// Valid reports whether c is a class a producer may send.
func (c ErrorClass) Valid() bool {
	for _, p := range ProducerClasses {
		if c == p {
			return true
		}
	}
	return false
}

// Status is where a dead letter stands in its life.
type Status string

// Statuses of a dead letter. Unresolved ones count towards depth and age.
const (
	StatusQuarantined     Status = "quarantined"
	StatusReplayRequested Status = "replay_requested"
	StatusReplaying       Status = "replaying"
	StatusReplayed        Status = "replayed"
	StatusReplayFailed    Status = "replay_failed"
	// StatusNeedsReconciliation: the outcome of its replay is unknown and a
	// republish could be a second effect; a person decides.
	StatusNeedsReconciliation Status = "needs_reconciliation"
	StatusDiscarded           Status = "discarded"
	StatusResolved            Status = "resolved"
)

// Source kinds: a message published to the DLQ stream, or a JetStream
// advisory about a message a consumer gave up on.
const (
	SourceDLQ      = "dlq"
	SourceAdvisory = "advisory"
)

// DefaultSubjectPrefix is the first token of DLQ subjects: dlq.<tenant>.<item_type...>.
const DefaultSubjectPrefix = "dlq"

// TimeLayout is how Dlq-First-Failed-At and Dlq-Last-Failed-At are written
// (RFC 3339 with optional fractional seconds).
const TimeLayout = "2006-01-02T15:04:05.999999999Z07:00"
