package views

import (
	"strconv"
	"strings"
	"time"
)

// Models of what became of replays: item outcomes, a request's emergency
// stop and reconciliation, the duplicate windows a selection waits for,
// replay chains and fix markers.

// OutcomeNotApplied is the outcome of an item a person settled "not
// applied, leave it" (replay.OutcomeNotApplied): its dead letter is back in
// quarantine.
const OutcomeNotApplied = "not_applied"

// OutcomeApplied is the outcome of an item a person settled "applied"
// (replay.OutcomeApplied): done, but not known to be the broker's store of
// the replay's publish, so never called replayed.
const OutcomeApplied = "applied"

// AppliedLabel is how an item settled "applied" reads
// (replaypolicy.AppliedText).
const AppliedLabel = "applied (found by a person)"

// OutcomeText is how an item outcome (a replay job's state, or
// OutcomeNotApplied) reads.
func OutcomeText(o string) string {
	switch o {
	case "pending", "claimed":
		return "to go"
	case "unknown":
		return "retrying (no PubAck)"
	case "suppressed_duplicate":
		return "suppressed as a duplicate"
	case OutcomeNotApplied:
		return "not applied — back in quarantine"
	case OutcomeApplied:
		return AppliedLabel
	}
	return Label(o)
}

// ItemOutcomeKind is the badge of an item outcome: green for replayed and
// for applied (a person found it done);
// amber for whatever did not happen as asked (blocked, suppressed, needs
// reconciliation, retrying, not applied); blue while it waits; grey for
// skipped and cancelled.
func ItemOutcomeKind(o string) string {
	switch o {
	case "replayed", OutcomeApplied:
		return BadgeOK
	case "pending", "claimed", "deferred":
		return BadgeInfo
	case "unknown", "suppressed_duplicate", "blocked", "needs_reconciliation", OutcomeNotApplied:
		return BadgeWarn
	}
	return BadgeNeutral
}

// ReconcileForm settles an item whose outcome nobody can know: applied,
// not applied (republish, while the request still publishes and when it
// needed fewer than two approvers), or not applied (leave it).
// NoRepublish says, in one line, why republish is not offered.
type ReconcileForm struct {
	DeadLetterID int64
	URL          string
	// Settled is the episode of the item's unknown outcome the form is
	// drawn in (how many times it was settled before): a decision is
	// taken only in it.
	Settled      int32
	CanRepublish bool
	NoRepublish  string
	Note         string // as typed, on a form that comes back refused
	Error        string
}

// RepublishNote is the line that says why republish is not offered: ""
// when it is, or when the form's error already says so (a refused
// republish comes back with the reason as its error).
func (f ReconcileForm) RepublishNote() string {
	if f.CanRepublish || strings.EqualFold(strings.TrimSuffix(strings.TrimSpace(f.Error), "."), strings.TrimSuffix(f.NoRepublish, ".")) {
		return ""
	}
	return f.NoRepublish
}

// SettleWait says who settles an item whose outcome nobody knows (it
// needs reconciliation) to a viewer who may not: an approver of Tenant
// other than the request's requester (replaypolicy.MayReconcile). Own:
// the viewer is that requester. Each: it is said once of every such item
// of a request (its page's Items section), not of one.
type SettleWait struct {
	Tenant string
	Own    bool
	Each   bool
}

// StopForm is the emergency stop of one request (or, with Tenants, of
// every running replay of a tenant the person may stop).
type StopForm struct {
	URL     string
	Tenants []string // for the tenant-wide stop: where the person may stop
	// Tenant is the tenant chosen (a form that comes back keeps it); none
	// is chosen at first, so that nothing is stopped by default.
	Tenant      string
	TenantError string
	Reason      string
	Error       string
}

// WaitsView is how many items of a request would wait for their target
// stream's duplicate window if it ran now.
type WaitsView struct {
	Items   int
	Until   time.Time // zero when every one waits for a copy that is behind
	Streams string
	Behind  int // of Items, those that wait for a copy made since the original to copy it: no time is known
	Unread  int
	First   string // the rule's sentence for the first one
}

// waitsFor begins confirmWaits' sentence: how many items wait, for which
// streams' windows.
func waitsFor(w WaitsView) string {
	return strconv.Itoa(w.Items) + " " + plural(w.Items, "item waits", "items wait") + " for the duplicate window of " + w.Streams
}

// ChainLinkView is one dead letter of a replay chain.
type ChainLinkView struct {
	ID         int64
	URL        string
	Generation int32
	Status     string
	At         time.Time
	Error      string
	Current    bool
}

// FixView is a recorded fix marker.
type FixView struct {
	Scope   string // "item type" or "error group"
	FixedAt time.Time
	Ref     string
	Note    string
	By      string // who recorded it, as every page names a person (dlq.Fix.Author)
	// Covers: in place after the dead letter of the page was stored, so
	// it lets a schema_invalid or permanent one go.
	Covers bool
}

// FixForm records a fix of the item type (or error group) of a dead
// letter: the form posts to URL; ItemType and Tenant say what it is for.
type FixForm struct {
	DeadLetterID int64
	URL          string
	Tenant       string
	ItemType     string
	Fingerprint  string
	// ReturnTo is where a recorded fix goes back to ("groups", or the dead
	// letter's page).
	ReturnTo string
	// Now fills "fixed at" (UTC, as a datetime-local input wants it).
	Now    time.Time
	Errors map[string]string
	Values map[string]string
}

// fixFieldID is the element id of a fix form's field.
func fixFieldID(f FixForm, name string) string {
	return "fix-" + idText(f.DeadLetterID) + "-" + name
}

// fixErrorID is the element id of the message under a fix form's field.
func fixErrorID(f FixForm, name string) string { return fixFieldID(f, name) + "-error" }

// GenerationText is a dead letter's generation as the list shows it: "gen 2".
func GenerationText(g int32) string { return "gen " + strconv.Itoa(int(g)) }

// GenerationTitle says what the generation means.
func GenerationTitle(g int32) string {
	return "It came back from " + strconv.Itoa(int(g)) + " replays of its message; from the policy's generation limit on, only manual may replay it"
}

// StopPageModel is the emergency stop page: the requests that may still
// publish or be approved in the viewer's tenants (Needs holds the status;
// URL is empty where the viewer may not read them), and the form.
type StopPageModel struct {
	Rows []ApprovalRow
	Form StopForm
}

// RequestAgainForm is an ended request's offer to request again what it
// did not replay and what is back in quarantine: Count dead letters (0: no
// offer), drafted anew by a POST to URL; Error says why the last try was
// refused.
type RequestAgainForm struct {
	URL   string
	Count int
	Error string
}

// RequestAgainLabel is the offer's button: "Request the 46 not replayed again".
func RequestAgainLabel(n int) string {
	return "Request the " + Count(int64(n)) + " not replayed again"
}
