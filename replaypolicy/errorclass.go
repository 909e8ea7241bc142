package replaypolicy

import (
	"fmt"
	"strings"
)

// Error classes: why a consumer gave up on a message (Dlq-Error-Class, or
// the kind of advisory the console captured). They are the dlq package's
// values; the rules take them as text so that this package stays a leaf.
const (
	ErrTransient     = "transient"
	ErrPermanent     = "permanent"
	ErrSchemaInvalid = "schema_invalid"
	ErrStaleVersion  = "stale_version"
	ErrUnknownEffect = "unknown_effect"
	ErrPolicy        = "policy"
	ErrMaxDeliveries = "max_deliveries"
	ErrTerminated    = "terminated"
	ErrUnclassified  = "unclassified"
	// ErrUnreadable: a Dlq-Error-Class ingest could not read in any
	// spelling (stored as unclassified, flagged invalid:error_class). It
	// may have meant stale_version or unknown_effect, so it is not judged
	// as a dead letter that said nothing.
	ErrUnreadable = "unreadable"
)

// ErrorClasses returns every error class the rules know, in the order the
// policy page shows them. A dead letter of any other error class (there is
// none: ingest stores unclassified instead, and the rules are handed
// unreadable for one it could not read) is judged as unclassified.
func ErrorClasses() []string {
	return []string{ErrTransient, ErrMaxDeliveries, ErrTerminated, ErrUnclassified, ErrSchemaInvalid, ErrPermanent,
		ErrStaleVersion, ErrUnknownEffect, ErrPolicy, ErrUnreadable}
}

// knownErrorClass reports whether ec is one of ErrorClasses.
func knownErrorClass(ec string) bool {
	for _, k := range ErrorClasses() {
		if ec == k {
			return true
		}
	}
	return false
}

// Replay is what an error class lets a replay do, from the most to the
// least permissive.
type Replay string

// What an error class lets a replay do (seeds, the retry table).
const (
	// ByClass: the item's replay class decides (a network timeout: retry
	// the same operation).
	ByClass Replay = "by_class"
	// AfterFix: not before a fix (schema invalid, a permanent failure):
	// only an edited payload, or after a recorded fix later than the dead
	// letter.
	AfterFix Replay = "after_fix"
	// Never: never replayed (a stale version: never blindly); resolve it by
	// hand.
	Never Replay = "never"
)

func replayRank(r Replay) int {
	switch r {
	case ByClass:
		return 0
	case AfterFix:
		return 1
	case Never:
		return 2
	}
	return -1
}

// ErrorRule is what the error class of a dead letter adds to the replay
// rules of its item's class. A policy file may tighten every field of it
// ([error_class.<name>] sections), never loosen one.
type ErrorRule struct {
	// Replay says whether items of the error class replay at all (see
	// the constants).
	Replay Replay
	// MinClass is the most permissive class an item of the error class is
	// replayed under ("": none); its class is the stricter of this and
	// what its item type and subject map to.
	MinClass Class
	// Approvals is the least number of approvers a request holding an item
	// of the error class needs, whatever its class (0 to 2).
	Approvals int
	// ReconciliationNote: a request holding an item of the error class
	// needs a note from the requester saying what was checked and the
	// evidence (the seeds: reconcile first).
	ReconciliationNote bool
}

// DefaultErrorRule returns the rule of error class ec when the policy file
// has no section for it. It follows the seeds' retry table:
//
//	error class                               replay     min_class   approvals  reconciliation_note
//	transient, max_deliveries, terminated,
//	unclassified (and any other)              by_class   -           0          no
//	schema_invalid, permanent                 after_fix  -           0          no
//	stale_version                             never      -           0          no
//	unknown_effect                            by_class   -           1          yes
//	policy                                    by_class   revalidate  0          no
//	unreadable                                by_class   manual      0          yes
//
// unreadable is the strictest rule that still lets a person replay: the
// producer may have meant stale_version (never blindly) or unknown_effect
// (reconcile first), so a requester says what they checked, and manual's
// two approvers agree. A policy file may tighten it to never.
func DefaultErrorRule(ec string) ErrorRule {
	switch ec {
	case ErrSchemaInvalid, ErrPermanent:
		return ErrorRule{Replay: AfterFix}
	case ErrStaleVersion:
		return ErrorRule{Replay: Never}
	case ErrUnknownEffect:
		return ErrorRule{Replay: ByClass, Approvals: 1, ReconciliationNote: true}
	case ErrPolicy:
		return ErrorRule{Replay: ByClass, MinClass: Revalidate}
	case ErrUnreadable:
		return ErrorRule{Replay: ByClass, MinClass: Manual, ReconciliationNote: true}
	}
	return ErrorRule{Replay: ByClass}
}

// ErrorRule returns the rule of error class ec under t (an unknown error
// class is judged as unclassified). Unreadable's is never looser than
// unclassified's, field by field: a file that tightened what a dead letter
// that said nothing needs (written before unreadable was told apart from
// it, or since) tightens what one that said something unreadable needs.
func (t *Table) ErrorRule(ec string) ErrorRule {
	if !knownErrorClass(ec) {
		ec = ErrUnclassified
	}
	r := t.ownErrorRule(ec)
	if ec == ErrUnreadable {
		u := t.ownErrorRule(ErrUnclassified)
		if replayRank(u.Replay) > replayRank(r.Replay) {
			r.Replay = u.Replay
		}
		if u.MinClass != "" && (r.MinClass == "" || Stricter(u.MinClass, r.MinClass)) {
			r.MinClass = u.MinClass
		}
		r.Approvals = max(r.Approvals, u.Approvals)
		r.ReconciliationNote = r.ReconciliationNote || u.ReconciliationNote
	}
	return r
}

// ownErrorRule is ec's section of t, or its default.
func (t *Table) ownErrorRule(ec string) ErrorRule {
	if r, ok := t.errorRules[ec]; ok {
		return r
	}
	return DefaultErrorRule(ec)
}

// FixLetsGo reports whether a recorded fix lets dead letters of error
// class ec be replayed under t (its rule is AfterFix); false with no
// table. The replay rules (FixedByRequester) and the groups page's offer
// of a fix read it.
func (t *Table) FixLetsGo(ec string) bool { return t != nil && t.ErrorRule(ec).Replay == AfterFix }

// ErrorRules returns every error class with its rule under t, in the order
// of ErrorClasses.
func (t *Table) ErrorRules() []ErrorClassRule {
	out := make([]ErrorClassRule, 0, len(ErrorClasses()))
	for _, ec := range ErrorClasses() {
		out = append(out, ErrorClassRule{ErrorClass: ec, Rule: t.ErrorRule(ec)})
	}
	return out
}

// ErrorClassRule is one error class with its rule, as ErrorRules lists them.
type ErrorClassRule struct {
	ErrorClass string
	Rule       ErrorRule
}

// DefaultGenerationLimit is generation_limit's default: a dead letter that
// came back from this many replays of its message is replayed only as
// manual.
const DefaultGenerationLimit = 3

// Bounds of generation_limit.
const (
	minGenerationLimit = 1
	maxGenerationLimit = 20
)

// GenerationLimit returns t's generation_limit: from this generation on (a
// dead letter that came back from that many replays) only manual may
// replay it.
func (t *Table) GenerationLimit() int { return t.generationLimit }

// DescribeErrorClass returns, as a sentence for the policy page, what an
// error class does to a replay under t.
func (t *Table) DescribeErrorClass(ec string) string {
	r := t.ErrorRule(ec)
	var parts []string
	switch r.Replay {
	case ByClass:
		parts = append(parts, "replays as its class allows")
	case AfterFix:
		parts = append(parts, "replays only with an edited payload, or after a fix of its item type (or error group) recorded later than the dead letter")
	case Never:
		parts = append(parts, "never replays: resolve it by hand")
	}
	if r.MinClass != "" {
		parts = append(parts, fmt.Sprintf("at least as %s", r.MinClass))
	}
	if r.Approvals > 0 {
		parts = append(parts, fmt.Sprintf("needs %s whatever its class", approverPhrase(r.Approvals)))
	}
	if r.ReconciliationNote {
		parts = append(parts, "needs a reconciliation note from the requester (what was checked, the evidence)")
	}
	return ec + ": " + strings.Join(parts, "; ") + "."
}

// errorRuleKeys are the keys of an [error_class.<name>] section.
func errorRuleKeys() []string {
	return []string{"replay", "min_class", "approvals", "reconciliation_note"}
}

// errorRule merges error class ec's section (if any) over its default and
// checks that it only tightens it. Problems are reported at the line of
// the offending key.
func (p *parser) errorRule(ec string, sections map[string]any) (ErrorRule, bool) {
	def := DefaultErrorRule(ec)
	r := def
	v, present := sections[ec]
	if !present {
		return r, false
	}
	where := "error_class." + ec
	sec, ok := v.(map[string]any)
	if !ok {
		p.problem(p.loc.line("error_class", ec), where, "", "%s must be a table, written [error_class.%s]; got %s", where, ec, typeName(v))
		return r, false
	}
	line := func(key string) int { return p.loc.line("error_class", ec, key) }
	for _, key := range sortedKeys(sec) {
		val := sec[key]
		switch key {
		case "replay":
			s, ok := val.(string)
			switch {
			case !ok:
				p.problem(line(key), where, key, "replay must be a string: by_class, after_fix or never; got %s", typeName(val))
			case replayRank(Replay(s)) < 0:
				p.problem(line(key), where, key, "replay = %q is not one of by_class, after_fix, never%s", s, suggest(s, "by_class", "after_fix", "never"))
			case replayRank(Replay(s)) < replayRank(def.Replay):
				p.problem(line(key), where, key, "replay = %q is looser than the default %q for %s: a policy file may only tighten error-class rules", s, def.Replay, ec)
			default:
				r.Replay = Replay(s)
			}
		case "min_class":
			s, ok := val.(string)
			switch {
			case !ok:
				p.problem(line(key), where, key, "min_class must be a class name; got %s", typeName(val))
			case !Class(s).Valid():
				p.problem(line(key), where, key, "min_class = %q is not one of %s%s", s, classList(), suggestClass(s))
			case def.MinClass != "" && Stricter(def.MinClass, Class(s)):
				p.problem(line(key), where, key, "min_class = %q is looser than the default %q for %s: a policy file may only tighten error-class rules", s, def.MinClass, ec)
			default:
				r.MinClass = Class(s)
			}
		case "approvals":
			n, ok := p.integer(val, where, key, line(key))
			switch {
			case !ok:
			case n < def.Approvals:
				p.problem(line(key), where, key, "approvals = %d is below the default of %d for %s: a policy file may only tighten error-class rules", n, def.Approvals, ec)
			case n > maxApprovals:
				p.problem(line(key), where, key, "approvals = %d is above the maximum of %d", n, maxApprovals)
			default:
				r.Approvals = n
			}
		case "reconciliation_note":
			b, ok := p.boolean(val, where, key, line(key))
			switch {
			case !ok:
			case def.ReconciliationNote && !b:
				p.problem(line(key), where, key, "reconciliation_note = false is not allowed for %s: its default asks for one, and a policy file may only tighten error-class rules", ec)
			default:
				r.ReconciliationNote = b
			}
		default:
			p.problem(line(key), where, key, "unknown key %q: an error class has %s%s", key, strings.Join(errorRuleKeys(), ", "), suggest(key, errorRuleKeys()...))
		}
	}
	return r, r != def
}

// errorRules reads the [error_class.<name>] sections: the rules that differ
// from their defaults (the others are not stored, so a file that spells out
// a default keeps its version).
func (p *parser) errorRules(raw map[string]any) map[string]ErrorRule {
	out := map[string]ErrorRule{}
	v, ok := raw["error_class"]
	if !ok {
		return out
	}
	sections, ok := v.(map[string]any)
	if !ok {
		p.problem(p.loc.line("error_class"), "", "error_class", "error_class must be a table of sections, written [error_class.<name>]; got %s", typeName(v))
		return out
	}
	for _, name := range sortedKeys(sections) {
		if !knownErrorClass(name) {
			p.problem(p.loc.line("error_class", name), "error_class."+name, "", "error class %q is not one of %s%s",
				name, strings.Join(ErrorClasses(), ", "), suggest(name, ErrorClasses()...))
		}
	}
	for _, ec := range ErrorClasses() {
		if r, changed := p.errorRule(ec, sections); changed {
			out[ec] = r
		}
	}
	return out
}

// generationLimit reads generation_limit (top level), default
// DefaultGenerationLimit.
func (p *parser) generationLimit(raw map[string]any) int {
	v, ok := raw["generation_limit"]
	if !ok {
		return DefaultGenerationLimit
	}
	n, ok := p.integer(v, "", "generation_limit", p.loc.line("generation_limit"))
	if !ok {
		return DefaultGenerationLimit
	}
	if n < minGenerationLimit || n > maxGenerationLimit {
		p.problem(p.loc.line("generation_limit"), "", "generation_limit", "generation_limit = %d must be between %d and %d", n, minGenerationLimit, maxGenerationLimit)
		return DefaultGenerationLimit
	}
	return n
}

// Revalidates says which items of t are revalidate ("" when none can be):
// the rules of that class, and the error classes whose min_class is
// revalidate (policy, by default), so that a deployment without a
// revalidation service can say at start what it cannot replay.
func (t *Table) Revalidates() string {
	var parts []string
	for i, r := range t.rules {
		if r.Class == Revalidate {
			parts = append(parts, fmt.Sprintf("rule %d", i+1))
		}
	}
	for _, ec := range ErrorClasses() {
		if t.ErrorRule(ec).MinClass == Revalidate {
			parts = append(parts, "error class "+ec)
		}
	}
	return strings.Join(parts, ", ")
}
