package replaypolicy

import (
	"strconv"
	"strings"
	"time"
)

// Class is a replay class: what a replay of an item type is allowed to do
// and what it needs. The set is closed; see the constants.
type Class string

// The replay classes, from the most to the least permissive. The comments
// say what a replay needs under the default knobs (DESIGN.md, "Replay-default
// policy table").
const (
	// Rebuildable items (a derived search-index update) replay directly,
	// in bulk: replaying twice only rebuilds the same thing.
	Rebuildable Class = "rebuildable"
	// Dedupe items (an analytics event) replay directly under their original
	// message id; an item already replayed successfully is skipped.
	Dedupe Class = "dedupe"
	// SameOperation items (an email, a publish action) replay only as the
	// same idempotent operation: operation id present, payload unchanged,
	// one approver who is not the requester.
	SameOperation Class = "same_operation"
	// Revalidate items (a permission-sensitive action) need the original
	// principal and one approver; the worker re-checks both authorities when
	// it executes.
	Revalidate Class = "revalidate"
	// Manual items (irreversible, destructive, or of an unknown item type)
	// need two distinct approvers, neither the requester, one item at a
	// time, a typed confirmation, and approvals that expire.
	Manual Class = "manual"
)

// classOrder returns the closed set of classes in the order they are shown
// and hashed. It is a function, not a package variable, so nothing can
// change the set at run time.
func classOrder() [5]Class {
	return [...]Class{Rebuildable, Dedupe, SameOperation, Revalidate, Manual}
}

// KnownClasses returns every class, most permissive first. The slice is a
// fresh copy.
func KnownClasses() []Class {
	order := classOrder()
	return order[:]
}

// Stricter reports whether a is stricter than b: later in the order of
// [KnownClasses] (rebuildable, dedupe, same_operation, revalidate, manual).
// An unknown class is stricter than every known one.
func Stricter(a, b Class) bool { return rank(a) > rank(b) }

func rank(c Class) int {
	for i, k := range classOrder() {
		if c == k {
			return i
		}
	}
	return len(classOrder())
}

// Valid reports whether c is one of the known classes.
func (c Class) Valid() bool {
	for _, k := range classOrder() {
		if c == k {
			return true
		}
	}
	return false
}

// classList is "rebuildable, dedupe, same_operation, revalidate, manual",
// for error messages.
func classList() string {
	order := classOrder()
	names := make([]string, len(order))
	for i, c := range order {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// minApprovals is the least number of approvals a class may be configured
// with: the DESIGN table's floor, which a policy file can raise but not lower.
func minApprovals(c Class) int {
	switch c {
	case Manual:
		return 2
	case SameOperation, Revalidate:
		return 1
	default:
		return 0
	}
}

// Knobs are the per-class settings of the policy table.
type Knobs struct {
	// Approvals is how many distinct approvers, none of them the requester,
	// a replay needs: 0 (direct), 1 or 2.
	Approvals int
	// Bulk allows one request to cover more than one item.
	Bulk bool
	// BulkCap is the most items one request may cover; 1 when Bulk is false.
	BulkCap int
	// DefaultRate is the publish rate in messages per second used when a
	// request names none.
	DefaultRate float64
	// MaxRate is the highest publish rate in messages per second a request
	// may ask for.
	MaxRate float64
	// ApprovalExpiry is how long an approval stays valid after it was given.
	ApprovalExpiry time.Duration
	// TypedConfirmation requires the operator to type the phrase given by
	// [ConfirmationPhrase] before the replay runs.
	TypedConfirmation bool
}

// ClassPolicy is one class with its knobs, as [Table.Classes] lists them.
type ClassPolicy struct {
	Class Class
	Knobs Knobs
}

// MaxApprovableItems is the most items a request that needs an approver
// may hold: an approver approves what the request page lists, and it lists
// at most this many (some 15 MB of page). So a policy may not set a
// bulk_cap above it for a class with approvals, and a request over it that
// needs an approver all the same (an edited payload, an error class that
// asks for one, a stricter class in its union) is refused at submit
// (CheckBulkCap) rather than left waiting for an approval nobody can give.
// A class without approvals may take up to 100,000 items in one request.
const MaxApprovableItems = 20_000

// Bounds on knobs. They are sanity limits, not tuning advice: a value outside
// them is almost certainly a typo.
const (
	maxApprovals      = 2 // Requirement has Direct, OneApprover and TwoApprovers; nothing more
	maxBulkCap        = 100_000
	maxRate           = 100_000.0 // messages per second
	minApprovalExpiry = time.Minute
	maxApprovalExpiry = 30 * 24 * time.Hour
)

// DefaultKnobs returns the knobs a class gets when the policy file has no
// section for it, or the value of a knob the section leaves out, and false
// for an unknown class. They follow DESIGN.md:
//
//	class           approvals  bulk  bulk_cap  default_rate  max_rate  approval_expiry  typed_confirmation
//	rebuildable     0          yes   10000     500           5000      24h              no
//	dedupe          0          yes   10000     200           2000      24h              no
//	same_operation  1          yes   500       50            500       24h              no
//	revalidate      1          yes   100       10            100       8h               no
//	manual          2          no    1         1             10        4h               yes
func DefaultKnobs(c Class) (Knobs, bool) {
	switch c {
	case Rebuildable:
		return Knobs{Approvals: 0, Bulk: true, BulkCap: 10_000, DefaultRate: 500, MaxRate: 5000, ApprovalExpiry: 24 * time.Hour}, true
	case Dedupe:
		return Knobs{Approvals: 0, Bulk: true, BulkCap: 10_000, DefaultRate: 200, MaxRate: 2000, ApprovalExpiry: 24 * time.Hour}, true
	case SameOperation:
		return Knobs{Approvals: 1, Bulk: true, BulkCap: 500, DefaultRate: 50, MaxRate: 500, ApprovalExpiry: 24 * time.Hour}, true
	case Revalidate:
		return Knobs{Approvals: 1, Bulk: true, BulkCap: 100, DefaultRate: 10, MaxRate: 100, ApprovalExpiry: 8 * time.Hour}, true
	case Manual:
		return Knobs{Approvals: 2, Bulk: false, BulkCap: 1, DefaultRate: 1, MaxRate: 10, ApprovalExpiry: 4 * time.Hour, TypedConfirmation: true}, true
	default:
		return Knobs{}, false
	}
}

// formatDuration writes d the way a policy file would: "4h", "90m", "7d".
func formatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d >= 2*day && d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	default:
		return d.String()
	}
}

// formatRate writes a rate without a trailing ".0" for whole numbers.
func formatRate(r float64) string {
	return strconv.FormatFloat(r, 'g', -1, 64)
}
