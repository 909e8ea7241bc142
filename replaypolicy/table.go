package replaypolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/quarantine-console/quarantine"
)

// ErrInvalidRate is returned (wrapped) by [Table.ValidateRate] for a rate that
// is not a positive finite number or is above the class's max_rate. It is an
// invalid quarantine.Error.
var ErrInvalidRate = quarantine.Errorf(quarantine.EINVALID, "invalid replay rate")

// Rule maps an item-type glob, a target-subject glob, or both, to a class.
// A rule with an item type (narrowed to a subject when it has one too) is
// an item-type rule; a rule with only a subject is a subject rule. Each
// kind is tried in order and the first match wins; an item's class is the
// stricter of the two answers (see [Table.ClassOf]).
type Rule struct {
	// ItemType and Subject are the globs as written in the file ("" when
	// the rule has none); see the package's glob syntax: "*" is one token,
	// a trailing ">" the rest.
	ItemType string
	Subject  string
	// Class is the class of what the rule matches.
	Class Class
}

// Table is a validated policy table. It is immutable; build one with [Load]
// or [Parse]. Its methods are safe for concurrent use.
type Table struct {
	name      string
	rules     []Rule
	patterns  []pattern // compiled rules[i].ItemType (raw "" when it has none)
	subjects  []pattern // compiled rules[i].Subject (raw "" when it has none)
	knobs     map[Class]Knobs
	retention Retention
	// errorRules are the error classes whose rule the file tightened (the
	// others have DefaultErrorRule); generationLimit is generation_limit.
	errorRules      map[string]ErrorRule
	generationLimit int
	version         string
}

// Retention returns how long dead letters are kept (the [retention]
// section; DefaultRetention where it says nothing). It is not part of
// Version.
func (t *Table) Retention() *Retention { return &t.retention }

// Name returns the name the table was parsed under, usually its file path.
func (t *Table) Name() string { return t.name }

// Version returns the table's content hash: the hex SHA-256 of a canonical
// form of the rules (in order) and of every class's effective knobs.
// Comments, whitespace, key order, the spelling of a value ("24h" or
// "1440m", 500 or 500.0) and knobs written out at their defaults do not
// change it; any change to a rule or to an effective knob does. Approvals
// are void once the version they were requested under is no longer current.
func (t *Table) Version() string { return t.version }

// Rules returns the rules in match order. The slice is a fresh copy.
func (t *Table) Rules() []Rule { return append([]Rule(nil), t.rules...) }

// Classes returns every class with its effective knobs (file values over
// [DefaultKnobs]), most permissive class first. The slice is a fresh copy.
func (t *Table) Classes() []ClassPolicy {
	order := classOrder()
	out := make([]ClassPolicy, 0, len(order))
	for _, c := range order {
		out = append(out, ClassPolicy{Class: c, Knobs: t.knobs[c]})
	}
	return out
}

// Knobs returns the effective knobs of class c, and false for an unknown
// class.
func (t *Table) Knobs(c Class) (Knobs, bool) {
	k, ok := t.knobs[c]
	return k, ok
}

// ClassFor returns the class of itemType by the item-type rules that name
// no subject, and the index of the rule that matched it, or [Manual] and -1
// when no rule matches: an item type nobody classified gets the strictest
// treatment. The class of an item that is replayed somewhere is
// [Table.ClassOf].
func (t *Table) ClassFor(itemType string) (Class, int) {
	shortened := quarantine.IsBoundedKey(itemType) // see ClassOf
	for i, p := range t.patterns {
		if p.raw != "" && t.subjects[i].raw == "" && !shortened && p.match(itemType) {
			return t.rules[i].Class, i
		}
	}
	return Manual, -1
}

// Classing is how an item's class was found: the class its item type maps
// to, the class its target subject maps to, and the stricter of the two.
type Classing struct {
	// Class is the stricter of TypeClass and SubjectClass.
	Class Class
	// TypeClass and TypeRule: the first item-type rule that matches the
	// item type (and the subject, when the rule names one); Manual and -1
	// when none does.
	TypeClass Class
	TypeRule  int
	// SubjectClass and SubjectRule: the first subject rule that matches
	// the target subject; "" and -1 when none does (the subject then does
	// not tighten anything).
	SubjectClass Class
	SubjectRule  int
	// BySubject: the subject rule is strictly stricter, so it decided.
	BySubject bool
	// ErrorClass is the item's error class and ErrorFloor its rule's
	// min_class ("" none); ByError: the floor is strictly stricter than
	// what the item type and subject give, so it decided.
	ErrorClass  string
	ErrorFloor  Class
	ByError     bool
	beforeError Class
	// Generation is how many replays of its message came back before this
	// dead letter, Limit the table's generation_limit; ByLoop: Generation
	// reached Limit, so the item is manual.
	Generation, Limit int
	ByLoop            bool
	// Union is every class whose rules the item must meet, each once:
	// its item type's, its subject's, its error class's floor and manual
	// past the generation limit, whichever of them is Class too. Class
	// is the strictest of them and sets the request the item goes in; the
	// rules of every one apply (Has), and the request's knobs are the
	// strictest of each (Table.UnionKnobs). A class that was the
	// strictest when it was added stays in it when a later one raises
	// Class (Classify), so its rules still apply: a same_operation item
	// type whose error class asks for revalidate keeps its operation-id
	// rules.
	Union []Class
}

// Has reports whether the rules of class k apply to the item: k is one of
// the classes it was classed by (Union), or its class (a Classing built
// from a class alone, as a job's or a request's, has no Union).
func (c Classing) Has(k Class) bool {
	if c.Class == k {
		return true
	}
	for _, u := range c.Union {
		if u == k {
			return true
		}
	}
	return false
}

// OncePerIdentity reports whether a replay of the item asks the replay
// ledger first: whether its message id, or its operation id, was replayed
// already (a replay the broker stored, or one a person settled as
// applied). Every class but rebuildable does, whatever class the earlier
// replay was made under: rebuilding twice only rebuilds the same thing,
// every other effect must not happen twice unseen.
func (c Classing) OncePerIdentity() bool {
	if c.Class != "" && c.Class != Rebuildable {
		return true
	}
	for _, u := range c.Union {
		if u != Rebuildable {
			return true
		}
	}
	return false
}

// skipsReplayed reports whether an item whose identity the ledger holds
// is skipped as done (dedupe and same_operation: replaying it once is the
// class's whole promise) rather than blocked for a person (revalidate and
// manual: a second effect of such an item is for a person to decide).
func (c Classing) skipsReplayed() bool {
	return c.Class == Dedupe || c.Class == SameOperation
}

// add puts k in the union once. It asks Union alone, not Has: a class
// that is Class now is still one the item was classed by once a stricter
// one raises Class.
func (c *Classing) add(k Class) {
	if k != "" && !slices.Contains(c.Union, k) {
		c.Union = append(c.Union, k)
	}
}

// UnionKnobs returns the knobs a request of items of classes must meet:
// the strictest of each knob over the classes (most approvals, bulk only
// when every class allows it, the smallest bulk cap, rates and expiry,
// typed confirmation when any class asks for it). An unknown class is
// skipped; with none known, manual's.
func (t *Table) UnionKnobs(classes ...Class) Knobs {
	var out Knobs
	seen := false
	for _, c := range classes {
		k, ok := t.knobs[c]
		if !ok {
			continue
		}
		if !seen {
			out, seen = k, true
			continue
		}
		out.Approvals = max(out.Approvals, k.Approvals)
		out.Bulk = out.Bulk && k.Bulk
		out.BulkCap = min(out.BulkCap, k.BulkCap)
		out.DefaultRate = min(out.DefaultRate, k.DefaultRate)
		out.MaxRate = min(out.MaxRate, k.MaxRate)
		out.ApprovalExpiry = min(out.ApprovalExpiry, k.ApprovalExpiry)
		out.TypedConfirmation = out.TypedConfirmation || k.TypedConfirmation
	}
	if !seen {
		out = t.knobs[Manual]
	}
	if !out.Bulk {
		out.BulkCap = 1
	}
	return out
}

// RequestKnobs are the knobs of a request of class whose items were
// classed by union too: the strictest of them (Table.UnionKnobs); false
// when the table has no such class (a request of it cannot be judged, so
// none can be made or approved). Every page and rule asks this one
// method, so they never disagree about such a class.
func (t *Table) RequestKnobs(class Class, union []Class) (Knobs, bool) {
	if _, ok := t.Knobs(class); !ok {
		return Knobs{}, false
	}
	return t.UnionKnobs(append([]Class{class}, union...)...), true
}

// unionOf is classes without repeats, in order of first appearance.
func unionOf(classes []Class) []Class {
	var out []Class
	for _, c := range classes {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// classNames names class, and the other classes of union its items are
// classed by too, for sentences: "dedupe (and rebuildable)".
func classNames(class Class, union []Class) string {
	var others []string
	for _, c := range union {
		if c != class && !slices.Contains(others, string(c)) {
			others = append(others, string(c))
		}
	}
	if len(others) == 0 {
		return string(class)
	}
	return fmt.Sprintf("%s (and %s)", class, strings.Join(others, ", "))
}

// Key is what decides the class of an item: its item type, the subject a
// replay publishes to, its error class and its generation.
type Key struct {
	ItemType, Subject, ErrorClass string
	Generation                    int
}

// Classify returns the class of an item of k: the stricter of its item
// type's and target subject's (ClassOf) and its error class's min_class;
// and manual from the table's generation_limit on, whatever the rest says
// (a message that keeps coming back is replayed by two people or not at
// all). Every one of those classes is in its Union, the ones it raised
// the class past included: an email.send (same_operation) dead letter
// with error class policy is revalidate, and still never edited nor
// replayed without its operation id.
func (t *Table) Classify(k Key) Classing {
	c := t.ClassOf(k.ItemType, k.Subject)
	c.ErrorClass, c.Generation, c.Limit = k.ErrorClass, k.Generation, t.generationLimit
	if floor := t.ErrorRule(k.ErrorClass).MinClass; floor != "" {
		c.ErrorFloor = floor
		if Stricter(floor, c.Class) {
			c.beforeError = c.Class
			c.Class, c.ByError = floor, true
		}
	}
	if t.generationLimit > 0 && k.Generation >= t.generationLimit && c.Class != Manual {
		c.Class, c.ByLoop = Manual, true
	}
	c.add(c.ErrorFloor)
	c.add(c.Class)
	return c
}

// Rule is the index of the rule that decided the class (-1: no rule
// matched the item type and it fell to manual).
func (c Classing) Rule() int {
	if c.BySubject {
		return c.SubjectRule
	}
	return c.TypeRule
}

// ClassOf returns the class of an item of itemType replayed to subject: the
// stricter (see [Stricter]) of what its item type and its target subject
// map to, so that a producer cannot file a dead letter under an easy item
// type to reach a strict subject; and both in its Union, so that the
// weaker one's rules still apply (a same_operation item type sent to a
// revalidate subject keeps its operation-id rules), and the stricter one's
// stay when Classify raises the class further.
//
// An item type stored shortened (quarantine.BoundedKey: over 256 bytes,
// cut and keyed by its hash) matches no item-type rule, and its item type
// falls to manual, as one no rule names: the cut drops the dots after it,
// so "search.<a long part>.admin.drop_index" would read as two parts and
// take search.*'s class, which the policy keeps from deeper item types.
// (TestRev38ShortenedItemTypeMatchesNoItemTypeRule)
func (t *Table) ClassOf(itemType, subject string) Classing {
	c := Classing{TypeClass: Manual, TypeRule: -1, SubjectRule: -1}
	shortened := quarantine.IsBoundedKey(itemType)
	for i, p := range t.patterns {
		if p.raw == "" || shortened || !p.match(itemType) {
			continue
		}
		if s := t.subjects[i]; s.raw != "" && !s.match(subject) {
			continue
		}
		c.TypeClass, c.TypeRule = t.rules[i].Class, i
		break
	}
	for i, s := range t.subjects {
		if t.patterns[i].raw == "" && s.raw != "" && s.match(subject) {
			c.SubjectClass, c.SubjectRule = t.rules[i].Class, i
			break
		}
	}
	c.Class = c.TypeClass
	if c.SubjectRule >= 0 && Stricter(c.SubjectClass, c.TypeClass) {
		c.Class, c.BySubject = c.SubjectClass, true
	}
	c.add(c.TypeClass)
	c.add(c.SubjectClass)
	return c
}

// UnlistedSubjects says what t leaves to producers, for a warning at
// start and on the policy page: "" when a subject rule that tightens
// matches every subject no subject rule before it matched (subject = ">",
// the last subject rule; manual in dev/policy.toml), else what is missing. A target subject no
// subject rule matches tightens nothing, so its item's class is its item
// type's; the producer writes both the item type (the DLQ subject) and the
// target (Dlq-Original-Subject), so it picks the class of every subject
// the policy did not foresee: an easy item type aimed at one gets an easy
// replay there. A catch-all of class rebuildable, the easiest, tightens
// nothing and is no answer; one of another class is the floor the policy's
// author chose for targets nobody classified.
func (t *Table) UnlistedSubjects() string {
	for i, s := range t.subjects {
		if t.patterns[i].raw == "" && s.raw != "" && len(s.toks) == 0 && s.tail {
			if c := t.rules[i].Class; !Stricter(c, Rebuildable) {
				return fmt.Sprintf(`the subject rule that matches every subject (subject = ">") is of class %s, which tightens nothing: `+
					`a target subject no rule before it matches takes its item type's class, so a producer's Dlq-Original-Subject chooses it; `+
					`make it class manual`, c)
			}
			return ""
		}
	}
	return `no subject rule matches every subject: a target subject no subject rule matches takes its item type's class, ` +
		`so a producer's Dlq-Original-Subject chooses it; end the subject rules with subject = ">" (class manual)`
}

// Stale reports whether a request made under policy version may no longer
// go on under t: the table changed since (or none is loaded). Approvals
// and drafts made under another version do not count.
func (t *Table) Stale(version string) bool { return t == nil || t.version != version }

// Confirmation is the phrase an operator types to confirm req, a request of
// class whose items are classed by union too, first among them (see
// ConfirmationPhrase); "" when none of those classes asks for a typed
// confirmation (RequestKnobs: it is asked when any of them asks for it),
// the table has no such class or none is loaded (t nil), or req has no
// item. It is the one rule of whether a phrase is asked and which:
// JudgeRequest's Terms.Confirmation, which the submit and the approval
// check, is this, and so is what the confirm page and
// Service.ConfirmationFor show.
func (t *Table) Confirmation(class Class, union []Class, first Item, req Request) string {
	if t == nil || req.Items < 1 {
		return ""
	}
	if k, ok := t.RequestKnobs(class, union); !ok || !k.TypedConfirmation {
		return ""
	}
	return ConfirmationPhrase(first, req)
}

// MinRate is the lowest publish rate, in messages per second, a request
// may ask for or a policy file may set (one message every 100 seconds):
// slower ones would leave a request's slots beyond any lease, and a rate of
// 0 or less means nothing at all.
const MinRate = 0.01

// JudgeRateInput says whether a rate a person typed is one: a finite
// number of messages per second of at least MinRate. It is pure; leaving
// the rate out (the class's default_rate) is not typing 0.
func JudgeRateInput(rate float64) Verdict {
	v := Verdict{Rule: -1, Outcome: Go}
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < MinRate {
		return v.plain(Block, CheckRate, fmt.Sprintf("a rate is a number of messages per second of at least %s; leave it empty for the class's default", formatRate(MinRate)))
	}
	return v
}

// ValidateRate checks a requested publish rate, in messages per second,
// against class c and returns the rate to use: the class's default_rate when
// rate is 0, otherwise rate itself. It returns an error wrapping
// [ErrInvalidRate] for a rate below MinRate, NaN or infinite, for a rate above
// the class's max_rate, or for an unknown class.
func (t *Table) ValidateRate(c Class, rate float64) (float64, error) {
	k, ok := t.knobs[c]
	if !ok {
		return 0, fmt.Errorf("validate rate for class %q: unknown class: %w", c, ErrInvalidRate)
	}
	r, err := validateRate(k, rate)
	if err != nil {
		return 0, fmt.Errorf("validate rate for %s: %w", c, err)
	}
	return r, nil
}

// validateRate is ValidateRate under knobs k.
func validateRate(k Knobs, rate float64) (float64, error) {
	switch {
	case rate == 0:
		return k.DefaultRate, nil
	case math.IsNaN(rate) || math.IsInf(rate, 0) || rate < MinRate:
		return 0, fmt.Errorf("rate %v: a rate must be a positive number of messages per second, at least %s: %w", rate, formatRate(MinRate), ErrInvalidRate)
	case rate > k.MaxRate:
		return 0, fmt.Errorf("rate %s: above the max_rate of %s messages per second: %w", formatRate(rate), formatRate(k.MaxRate), ErrInvalidRate)
	}
	return rate, nil
}

// Describe returns, as one or two sentences for the policy page, what a
// replay of class c needs under this table. It is written from c's knobs
// alone, so that it says nothing they contradict (bulk or not) nor
// anything of one item (how its class was chosen): the dead letter and
// confirmation pages show it beside an item classified by a rule.
func (t *Table) Describe(c Class) string {
	k, ok := t.knobs[c]
	if !ok {
		return fmt.Sprintf("%q is not a replay class.", string(c))
	}
	return describeKnobs(c, k)
}

// DescribeRequest is Describe for a request of class c whose items were
// classed by union too: a request is held to the strictest knobs of all
// of them (RequestKnobs), so the sentence is written from those, and says
// which other classes made them stricter than c's own. A request page
// that described c alone would say "expires after 8h" and no phrase,
// where its approval lapses sooner and its form asks for one.
func (t *Table) DescribeRequest(c Class, union []Class) string {
	own, ok := t.knobs[c]
	if !ok {
		return fmt.Sprintf("%q is not a replay class.", string(c))
	}
	k, _ := t.RequestKnobs(c, union)
	text := describeKnobs(c, k)
	if k == own {
		return text
	}
	var others []string
	for _, u := range unionOf(union) {
		if u != c {
			others = append(others, string(u))
		}
	}
	return text + fmt.Sprintf(" Its items are classed %s as well: what it needs above is the strictest of each of these classes' settings.", strings.Join(others, ", "))
}

// describeKnobs is the sentence of a replay of class c with knobs k.
func describeKnobs(c Class, k Knobs) string {
	var b strings.Builder
	b.WriteString(string(c))
	b.WriteString(": ")
	switch c {
	case Rebuildable:
		b.WriteString("replaying only rebuilds derived data, so it is safe to repeat")
	case Dedupe:
		b.WriteString("replays under the original message id, which is mandatory; an item already replayed successfully is skipped, not re-sent")
	case SameOperation:
		b.WriteString("replays only as the same idempotent operation: the operation id must be present and the payload unchanged since ingest")
	case Revalidate:
		b.WriteString("needs the original principal; when the replay runs, the worker re-checks that principal's authority and the approver's rights, and refuses if either fails or gets no answer")
	case Manual:
		b.WriteString("for effects that are irreversible or destructive; an item type no rule matches is manual too")
	}
	b.WriteString(". ")
	switch k.Approvals {
	case 0:
		b.WriteString("One operator with replay rights may replay it directly")
	case 1:
		b.WriteString("It needs one approver who is not the requester")
	default:
		b.WriteString("It needs two distinct approvers, neither of them the requester")
	}
	if k.Approvals > 0 {
		fmt.Fprintf(&b, "; an approval covers exactly one request and expires after %s", formatDuration(k.ApprovalExpiry))
	}
	if k.Bulk {
		fmt.Fprintf(&b, "; bulk requests up to %d items", k.BulkCap)
	} else {
		b.WriteString("; one item per request, no bulk")
	}
	fmt.Fprintf(&b, "; it publishes %s per second by default, at most %s per second", messages(k.DefaultRate), messages(k.MaxRate))
	switch {
	case k.TypedConfirmation && k.Bulk:
		b.WriteString(`; the operator must type "REPLAY <message id>" to confirm one item, "REPLAY <n> ITEMS" for a bulk request`)
	case k.TypedConfirmation:
		b.WriteString(`; the operator must type "REPLAY <message id>" to confirm`)
	}
	b.WriteString(".")
	return b.String()
}

// messages writes "1 message" or "500 messages".
func messages(rate float64) string {
	if rate == 1 {
		return "1 message"
	}
	return formatRate(rate) + " messages"
}

// canonical is the text Version hashes. Its first line names the format so
// that a future change of the canonical form cannot collide with this one.
func (t *Table) canonical() string {
	var b strings.Builder
	b.WriteString("quarantine replaypolicy canonical v1\n")
	for _, r := range t.rules {
		if r.Subject == "" {
			fmt.Fprintf(&b, "rule %q %s\n", r.ItemType, r.Class) // as before subject rules, so old files keep their version
			continue
		}
		fmt.Fprintf(&b, "rule %q subject %q %s\n", r.ItemType, r.Subject, r.Class)
	}
	for _, c := range classOrder() {
		k := t.knobs[c]
		fmt.Fprintf(&b, "class %s approvals=%d bulk=%t bulk_cap=%d default_rate=%s max_rate=%s approval_expiry_ns=%d typed_confirmation=%t\n",
			c, k.Approvals, k.Bulk, k.BulkCap, formatRate(k.DefaultRate), formatRate(k.MaxRate), int64(k.ApprovalExpiry), k.TypedConfirmation)
	}
	// Error-class rules and the generation limit only where they differ
	// from the defaults, so that a file written before them keeps its
	// version (the defaults only tighten, and every item is judged again
	// when it is published).
	for _, ec := range ErrorClasses() {
		if r, ok := t.errorRules[ec]; ok {
			fmt.Fprintf(&b, "error_class %s replay=%s min_class=%s approvals=%d reconciliation_note=%t\n",
				ec, r.Replay, r.MinClass, r.Approvals, r.ReconciliationNote)
		}
	}
	if t.generationLimit != DefaultGenerationLimit {
		fmt.Fprintf(&b, "generation_limit=%d\n", t.generationLimit)
	}
	return b.String()
}

func (t *Table) computeVersion() string {
	sum := sha256.Sum256([]byte(t.canonical()))
	return hex.EncodeToString(sum[:])
}

// marshal writes the table as a policy file that Parse accepts and that has
// the same Version: every rule in order and every class with all its knobs.
// Globs need no escaping: compilePattern admits only letters, digits, _, -,
// dots and wildcards.
func (t *Table) marshal() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "generation_limit = %d\n\n", t.generationLimit)
	for _, r := range t.rules {
		b.WriteString("[[rule]]\n")
		if r.ItemType != "" {
			fmt.Fprintf(&b, "item_type = %q\n", r.ItemType)
		}
		if r.Subject != "" {
			fmt.Fprintf(&b, "subject = %q\n", r.Subject)
		}
		fmt.Fprintf(&b, "class = %q\n\n", r.Class)
	}
	for _, c := range classOrder() {
		k := t.knobs[c]
		fmt.Fprintf(&b, "[class.%s]\napprovals = %d\nbulk = %t\n", c, k.Approvals, k.Bulk)
		if k.Bulk {
			fmt.Fprintf(&b, "bulk_cap = %d\n", k.BulkCap)
		}
		fmt.Fprintf(&b, "default_rate = %s\nmax_rate = %s\napproval_expiry = %q\ntyped_confirmation = %t\n\n",
			tomlFloat(k.DefaultRate), tomlFloat(k.MaxRate), formatDuration(k.ApprovalExpiry), k.TypedConfirmation)
	}
	for _, ec := range ErrorClasses() {
		r := t.ErrorRule(ec)
		fmt.Fprintf(&b, "[error_class.%s]\nreplay = %q\n", ec, r.Replay)
		if r.MinClass != "" {
			fmt.Fprintf(&b, "min_class = %q\n", r.MinClass)
		}
		fmt.Fprintf(&b, "approvals = %d\nreconciliation_note = %t\n\n", r.Approvals, r.ReconciliationNote)
	}
	return []byte(b.String())
}

// tomlFloat writes a rate as a TOML number; Go's exponent form ("1e-05") is
// valid TOML, and whole numbers are written as integers, which Parse accepts
// for rates.
func tomlFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
