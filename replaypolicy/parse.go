package replaypolicy

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/quarantine-console/quarantine"
)

// ErrInvalidPolicy matches (with errors.Is) every error [Parse] and [Load]
// return for a file that is not a valid policy table. It is an invalid
// quarantine.Error.
var ErrInvalidPolicy = quarantine.Errorf(quarantine.EINVALID, "invalid replay policy")

// PolicyError is one problem in a policy file. Parse returns every problem it
// finds, joined with errors.Join in file order; errors.As finds the first.
type PolicyError struct {
	// File is the name the table was parsed under, usually its path.
	File string
	// Line is the 1-based line of the problem, or 0 when it is not known.
	Line int
	// Where names the part of the file: "rule 3" (1-based, in file order),
	// "class.manual", or "" for the file as a whole.
	Where string
	// Key is the offending field ("class", "approvals"), or "".
	Key string
	// Msg says what is wrong, naming the field and its value.
	Msg string
}

// Error returns "file: line N: where: msg", leaving out the parts that are
// not known.
func (e *PolicyError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ": line %d", e.Line)
	}
	if e.Where != "" {
		b.WriteString(": ")
		b.WriteString(e.Where)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap makes every PolicyError match [ErrInvalidPolicy].
func (e *PolicyError) Unwrap() error { return ErrInvalidPolicy }

// Load reads and parses the policy file at path; see [Parse]. A file that
// cannot be read gives the *fs.PathError wrapped with the operation.
func Load(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load replay policy: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and validates a policy file; name is used in error messages
// (normally the file's path). The file is rejected, with every problem
// reported as a [*PolicyError] (all matching [ErrInvalidPolicy]), when:
// the TOML does not parse; a key is unknown; a value has the wrong type;
// a rule lacks item_type or class, names an unknown class, has a malformed
// glob, repeats an earlier rule's glob, or can never match because an
// earlier rule matches everything it would; a class section names an unknown
// class; or a knob is out of bounds:
//
//	approvals           0..2, and at least 1 for same_operation and revalidate, 2 for manual
//	bulk                false for manual
//	bulk_cap            1..100000 when bulk is true, at most 20000 (MaxApprovableItems) when approvals > 0; not set when bulk is false
//	default_rate        >= MinRate and <= max_rate (messages per second)
//	max_rate            >= MinRate and <= 100000
//	approval_expiry     a duration ("90m", "24h", "7d") from 1m to 30d
//	typed_confirmation  true for manual
//
// A class without a section, and a knob a section leaves out, take
// [DefaultKnobs]. A file with no rules is valid: every item is then manual.
//
// An [error_class.<name>] section (one of [ErrorClasses]) may tighten the
// error class's [DefaultErrorRule], never loosen it: replay (by_class <
// after_fix < never), min_class (a class at least as strict as the
// default's), approvals (from the default up to 2) and reconciliation_note
// (true where the default is). generation_limit (top level, 1 to 20,
// default 3) is the generation from which only manual may replay a dead
// letter.
//
// The [retention] section is refused (see [Retention]) for a period out of
// bounds, a [[retention.rule]] tenant that is not "*" or one tenant's name,
// and a rule order that would keep dead letters other than a rule says: a
// rule an earlier one covers, or one setting a status that an earlier,
// overlapping rule leaves to the section.
func Parse(name string, data []byte) (*Table, error) {
	src := string(data)
	var raw map[string]any
	if _, err := toml.Decode(src, &raw); err != nil {
		return nil, decodeError(name, src, err)
	}
	p := &parser{file: name, loc: newLocator(src)}
	t := &Table{name: name, knobs: map[Class]Knobs{}}

	for _, key := range sortedKeys(raw) {
		switch key {
		case "rule", "class", "error_class", "generation_limit", "retention":
		default:
			p.problem(p.loc.line(key), "", key, "unknown key %q: a policy file has generation_limit, [[rule]] entries, [class.<name>], [error_class.<name>] and [retention] sections%s",
				key, suggest(key, "rule", "class", "error_class", "generation_limit", "retention"))
		}
	}
	if v, ok := raw["retention"]; ok {
		t.retention = p.retention(v)
	}
	if v, ok := raw["rule"]; ok {
		t.rules, t.patterns, t.subjects = p.rules(v)
	}
	var sections map[string]any
	if v, ok := raw["class"]; ok {
		sections, ok = v.(map[string]any)
		if !ok {
			p.problem(p.loc.line("class"), "", "class", "class must be a table of sections, written [class.<name>]; got %s", typeName(v))
		}
	}
	for _, name := range sortedKeys(sections) {
		if !Class(name).Valid() {
			p.problem(p.loc.line("class", name), "class."+name, "", "class %q is not one of %s%s", name, classList(), suggestClass(name))
		}
	}
	for _, c := range classOrder() {
		t.knobs[c] = p.knobs(c, sections)
	}
	t.errorRules = p.errorRules(raw)
	t.generationLimit = p.generationLimit(raw)

	if err := p.err(); err != nil {
		return nil, err
	}
	t.version = t.computeVersion()
	return t, nil
}

// decodeError turns a TOML syntax error into a PolicyError with its line.
func decodeError(file, src string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		line := pe.Position.Line
		// The decoder counts a newline it stopped at as the next line ("[[rule]"
		// at the end of line 1 is reported on line 2); the byte offset of the
		// error's start says where the operator has to look.
		if pe.Position.Len > 0 && pe.Position.Start >= 0 && pe.Position.Start < len(src) {
			line = 1 + strings.Count(src[:pe.Position.Start], "\n")
		}
		return &PolicyError{File: file, Line: line, Key: pe.LastKey, Msg: "TOML syntax: " + oneLine(pe.Message)}
	}
	return &PolicyError{File: file, Msg: "TOML: " + oneLine(strings.TrimPrefix(err.Error(), "toml: "))}
}

// oneLine escapes line breaks the decoder quotes from the input, so that each
// problem stays on one line of the joined error.
func oneLine(s string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

// parser collects problems while walking the decoded file.
type parser struct {
	file     string
	loc      locator
	problems []*PolicyError
}

func (p *parser) problem(line int, where, key, format string, args ...any) {
	p.problems = append(p.problems, &PolicyError{File: p.file, Line: line, Where: oneLine(where), Key: key, Msg: oneLine(fmt.Sprintf(format, args...))})
}

// err returns the problems in file order (those without a line last), or nil.
func (p *parser) err() error {
	if len(p.problems) == 0 {
		return nil
	}
	sort.SliceStable(p.problems, func(i, j int) bool {
		li, lj := p.problems[i].Line, p.problems[j].Line
		if li == 0 || lj == 0 {
			return lj == 0 && li != 0
		}
		return li < lj
	})
	errs := make([]error, len(p.problems))
	for i, e := range p.problems {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// rules validates the [[rule]] entries and returns the valid ones with their
// compiled globs (item type and subject; a zero pattern where a rule has
// none). Invalid rules are reported and left out (the table is rejected
// anyway), so the shadowing check only compares real patterns.
func (p *parser) rules(v any) ([]Rule, []pattern, []pattern) {
	entries, ok := tables(v)
	if !ok {
		p.problem(p.loc.line("rule"), "", "rule", "rule must be an array of tables, written [[rule]] (with double brackets); got %s", typeName(v))
		return nil, nil, nil
	}
	var (
		rules              []Rule
		patterns, subjects []pattern
		numbers            []int // 1-based rule number of rules[i], for messages
	)
	for i, e := range entries {
		where := "rule " + strconv.Itoa(i+1)
		idx := strconv.Itoa(i)
		for _, k := range sortedKeys(e) {
			if k != "item_type" && k != "subject" && k != "class" {
				p.problem(p.loc.line("rule", idx, k), where, k, "unknown key %q: a rule has item_type, subject and class%s", k, suggest(k, "item_type", "subject", "class"))
			}
		}
		_, hasType := e["item_type"]
		_, hasSubject := e["subject"]
		if !hasType && !hasSubject {
			p.problem(p.loc.line("rule", idx), where, "item_type", "item_type is missing: a rule matches an item_type, a subject, or both")
			continue
		}
		pat, okGlob := p.glob(e, "item_type", hasType, where, idx)
		subj, okSubj := p.glob(e, "subject", hasSubject, where, idx)
		cls, okClass := p.str(e, "class", where, p.loc.line("rule", idx, "class"))
		if okClass && !Class(cls).Valid() {
			p.problem(p.loc.line("rule", idx, "class"), where, "class", "class %q is not one of %s%s", cls, classList(), suggestClass(cls))
			okClass = false
		}
		if !okGlob || !okSubj || !okClass {
			continue
		}
		key := "item_type"
		if pat.raw == "" {
			key = "subject"
		}
		shadowed := false
		for j := range patterns {
			switch {
			case patterns[j].raw == pat.raw && subjects[j].raw == subj.raw:
				p.problem(p.loc.line("rule", idx, key), where, key, "%s repeats rule %d; the first match wins, so this rule is never used", describeRule(pat, subj), numbers[j])
			case shadows(patterns[j], subjects[j], pat, subj) && subj.raw == "" && subjects[j].raw == "":
				p.problem(p.loc.line("rule", idx, key), where, key, "item_type %q can never match: rule %d (%q) matches every item type it would; put the narrower rule first",
					pat.raw, numbers[j], patterns[j].raw)
			case shadows(patterns[j], subjects[j], pat, subj):
				p.problem(p.loc.line("rule", idx, key), where, key, "%s can never match: rule %d (%s) matches everything it would; put the narrower rule first",
					describeRule(pat, subj), numbers[j], describeRule(patterns[j], subjects[j]))
			default:
				continue
			}
			shadowed = true
			break
		}
		if shadowed || !p.ruleUnambiguous(rules, patterns, subjects, numbers, pat, subj, Class(cls), where, idx, key) {
			continue
		}
		rules = append(rules, Rule{ItemType: pat.raw, Subject: subj.raw, Class: Class(cls)})
		patterns, subjects = append(patterns, pat), append(subjects, subj)
		numbers = append(numbers, i+1)
	}
	return rules, patterns, subjects
}

// ruleUnambiguous reports whether the rule (pat, subj, cls), after the
// valid rules before it (rules, their globs, numbers[j] the 1-based number
// of rules[j]), says what it means, else reports it on its line. The first
// rule of a kind (item type, or subject alone) that matches decides, so a
// later rule is refused when an earlier one of its kind matches some of
// the same items but not only ones it matches (neither is the narrower:
// item_type "billing.*" and "*.refund"), with another class: the items
// both match get the earlier rule's class, which is written nowhere as
// meant for them, and may need fewer approvals than the later rule's
// ("billing.refund" rebuildable, where "*.refund" says manual). An
// earlier rule inside this one is the exception "narrower first" makes,
// and an overlap a rule before both takes whole (settled) reaches neither.
// Retention rules are refused alike (retentionRuleReached).
func (p *parser) ruleUnambiguous(rules []Rule, patterns, subjects []pattern, numbers []int, pat, subj pattern, cls Class, where, idx, key string) bool {
	for j := range rules {
		both, ok := overlapOf(patterns[j], subjects[j], pat, subj)
		if !ok || rules[j].Class == cls || shadows(pat, subj, patterns[j], subjects[j]) {
			continue
		}
		if settledBy(patterns[:j], subjects[:j], both) {
			continue
		}
		p.problem(p.loc.line("rule", idx, key), where, key, "rule %d (%s, %s) and this rule (%s, %s) both match %s, neither only the other's: "+
			"the first rule that matches decides, so those are %s; say which you mean in a rule for them, put first",
			numbers[j], describeRule(patterns[j], subjects[j]), rules[j].Class, describeRule(pat, subj), cls, describeRule(both.typ, both.subj), rules[j].Class)
		return false
	}
	return true
}

// settledBy reports whether one of the rules with these globs takes all of
// both (what two later rules both match): neither of those rules reaches it.
func settledBy(patterns, subjects []pattern, both globs) bool {
	for k := range patterns {
		if shadows(patterns[k], subjects[k], both.typ, both.subj) {
			return true
		}
	}
	return false
}

// globs are the item type and subject globs of a rule, or of what two
// rules both match (a zero pattern: no glob, anything).
type globs struct{ typ, subj pattern }

// overlapOf returns what two rules of one kind both match (the item types
// and subjects both take), and whether anything is: rules of two kinds
// are never compared, since an item's class is the stricter of its item
// type rule's and its subject rule's.
func overlapOf(typ, subj, laterTyp, laterSubj pattern) (globs, bool) {
	if (typ.raw == "") != (laterTyp.raw == "") {
		return globs{}, false
	}
	var both globs
	if typ.raw != "" {
		if !typ.overlaps(laterTyp) {
			return globs{}, false
		}
		both.typ = typ.intersect(laterTyp)
	}
	switch {
	case subj.raw == "":
		both.subj = laterSubj
	case laterSubj.raw == "":
		both.subj = subj
	case !subj.overlaps(laterSubj):
		return globs{}, false
	default:
		both.subj = subj.intersect(laterSubj)
	}
	return both, true
}

// glob reads and compiles the optional glob key of a rule; a rule without
// it gets the zero pattern.
func (p *parser) glob(e map[string]any, key string, present bool, where, idx string) (pattern, bool) {
	if !present {
		return pattern{}, true
	}
	raw, ok := p.str(e, key, where, p.loc.line("rule", idx, key))
	if !ok {
		return pattern{}, false
	}
	pat, err := compilePattern(raw)
	if err != nil {
		p.problem(p.loc.line("rule", idx, key), where, key, "%s %q %v", key, raw, err)
		return pattern{}, false
	}
	return pat, true
}

// shadows reports whether an earlier rule (typ, subj) matches everything a
// later rule (laterTyp, laterSubj) would, so the later one is never used.
// Item-type rules and subject rules are tried apart: neither shadows the
// other kind.
func shadows(typ, subj, laterTyp, laterSubj pattern) bool {
	if (typ.raw == "") != (laterTyp.raw == "") {
		return false
	}
	if typ.raw != "" && !typ.covers(laterTyp) {
		return false
	}
	return subj.raw == "" || (laterSubj.raw != "" && subj.covers(laterSubj))
}

// describeRule names a rule's globs for messages: item_type "x", subject "y".
func describeRule(typ, subj pattern) string {
	var parts []string
	if typ.raw != "" {
		parts = append(parts, fmt.Sprintf("item_type %q", typ.raw))
	}
	if subj.raw != "" {
		parts = append(parts, fmt.Sprintf("subject %q", subj.raw))
	}
	return strings.Join(parts, ", ")
}

// str reads a required string field of a rule.
func (p *parser) str(e map[string]any, key, where string, line int) (string, bool) {
	v, ok := e[key]
	if !ok {
		p.problem(line, where, key, "%s is missing", key)
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		p.problem(line, where, key, "%s must be a string; got %s", key, typeName(v))
		return "", false
	}
	return s, true
}

// knobKeys are the keys of a class section, in the order of the file format.
func knobKeys() []string {
	return []string{"approvals", "bulk", "bulk_cap", "default_rate", "max_rate", "approval_expiry", "typed_confirmation"}
}

// knobs merges class c's section (if any) over its defaults and validates
// the result. Problems are reported at the line of the offending key, or of
// the section header when the value came from the defaults.
func (p *parser) knobs(c Class, sections map[string]any) Knobs {
	k, _ := DefaultKnobs(c)
	name := string(c)
	where := "class." + name
	v, present := sections[name]
	if !present {
		return k
	}
	sec, ok := v.(map[string]any)
	if !ok {
		p.problem(p.loc.line("class", name), where, "", "%s must be a table, written [class.%s]; got %s", where, name, typeName(v))
		return k
	}
	line := func(key string) int { return p.loc.line("class", name, key) }
	for _, key := range sortedKeys(sec) {
		val := sec[key]
		switch key {
		case "approvals":
			if n, ok := p.integer(val, where, key, line(key)); ok {
				k.Approvals = n
			}
		case "bulk":
			if b, ok := p.boolean(val, where, key, line(key)); ok {
				k.Bulk = b
			}
		case "bulk_cap":
			if n, ok := p.integer(val, where, key, line(key)); ok {
				k.BulkCap = n
			}
		case "default_rate":
			if f, ok := p.number(val, where, key, line(key)); ok {
				k.DefaultRate = f
			}
		case "max_rate":
			if f, ok := p.number(val, where, key, line(key)); ok {
				k.MaxRate = f
			}
		case "approval_expiry":
			s, ok := val.(string)
			if !ok {
				p.problem(line(key), where, key, `approval_expiry must be a duration string such as "4h" or "7d"; got %s`, typeName(val))
				continue
			}
			d, err := parseExpiry(s)
			if err != nil {
				p.problem(line(key), where, key, "approval_expiry = %q: %v", s, err)
				continue
			}
			k.ApprovalExpiry = d
		case "typed_confirmation":
			if b, ok := p.boolean(val, where, key, line(key)); ok {
				k.TypedConfirmation = b
			}
		default:
			p.problem(line(key), where, key, "unknown key %q: a class has %s%s", key, strings.Join(knobKeys(), ", "), suggest(key, knobKeys()...))
		}
	}

	if floor := minApprovals(c); k.Approvals < floor {
		p.problem(line("approvals"), where, "approvals", "approvals = %d is below the minimum of %d for %s%s", k.Approvals, floor, c, approvalsWhy(c))
	} else if k.Approvals > maxApprovals {
		p.problem(line("approvals"), where, "approvals", "approvals = %d is above the maximum of %d", k.Approvals, maxApprovals)
	}
	if c == Manual && k.Bulk {
		p.problem(line("bulk"), where, "bulk", "bulk = true is not allowed for manual: destructive replays go one item at a time")
	}
	_, capSet := sec["bulk_cap"]
	switch {
	case k.Bulk && (k.BulkCap < 1 || k.BulkCap > maxBulkCap):
		p.problem(line("bulk_cap"), where, "bulk_cap", "bulk_cap = %d must be between 1 and %d when bulk = true", k.BulkCap, maxBulkCap)
	case k.Bulk && k.Approvals > 0 && k.BulkCap > MaxApprovableItems:
		p.problem(line("bulk_cap"), where, "bulk_cap", "bulk_cap = %d is above %d, the most items an approver can approve in one request (the request page lists no more), "+
			"and %s needs an approver: a bigger request could be submitted but never approved; set bulk_cap to at most %d", k.BulkCap, MaxApprovableItems, c, MaxApprovableItems)
	case !k.Bulk && capSet && k.BulkCap != 1:
		p.problem(line("bulk_cap"), where, "bulk_cap", "bulk_cap = %d has no effect with bulk = false (one item per request); remove it", k.BulkCap)
	case !k.Bulk:
		k.BulkCap = 1 // one item per request; keeps Version independent of a cap that means nothing
	}
	p.rate(k.DefaultRate, where, "default_rate", line("default_rate"))
	p.rate(k.MaxRate, where, "max_rate", line("max_rate"))
	if k.DefaultRate > k.MaxRate {
		p.problem(line("default_rate"), where, "default_rate", "default_rate = %s is above max_rate = %s", formatRate(k.DefaultRate), formatRate(k.MaxRate))
	}
	if c == Manual && !k.TypedConfirmation {
		p.problem(line("typed_confirmation"), where, "typed_confirmation", "typed_confirmation = false is not allowed for manual: a destructive replay must be confirmed by typing")
	}
	return k
}

func approvalsWhy(c Class) string {
	switch c {
	case Manual:
		return " (two distinct approvers, neither the requester)"
	case SameOperation, Revalidate:
		return " (one approver who is not the requester)"
	}
	return ""
}

// rate reports a rate that is not a finite number from MinRate to maxRate.
func (p *parser) rate(f float64, where, key string, line int) {
	if math.IsNaN(f) || f < MinRate || f > maxRate {
		p.problem(line, where, key, "%s = %s must be above 0 and at most %s messages per second (at least %s)", key, formatRate(f), formatRate(maxRate), formatRate(MinRate))
	}
}

func (p *parser) integer(v any, where, key string, line int) (int, bool) {
	n, ok := v.(int64)
	if !ok {
		p.problem(line, where, key, "%s must be a whole number; got %s", key, typeName(v))
		return 0, false
	}
	// Out-of-range values are clamped only so the bound checks report them;
	// no valid value is anywhere near these limits.
	if n > math.MaxInt32 {
		n = math.MaxInt32
	} else if n < math.MinInt32 {
		n = math.MinInt32
	}
	return int(n), true
}

func (p *parser) number(v any, where, key string, line int) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	p.problem(line, where, key, "%s must be a number (messages per second); got %s", key, typeName(v))
	return 0, false
}

func (p *parser) boolean(v any, where, key string, line int) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		p.problem(line, where, key, "%s must be true or false; got %s", key, typeName(v))
	}
	return b, ok
}

// parseExpiry parses an approval expiry: a Go duration ("90m", "24h",
// "1h30m") or a whole number of days ("7d"), from 1m to 30d.
func parseExpiry(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 365 {
			return 0, fmt.Errorf(`not a duration: use a whole number of days ("7d") or Go duration syntax ("90m", "24h")`)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf(`not a duration: use Go duration syntax ("90m", "24h") or a whole number of days ("7d")`)
		}
	}
	if d < minApprovalExpiry || d > maxApprovalExpiry {
		return 0, fmt.Errorf("must be between %s and %s", formatDuration(minApprovalExpiry), formatDuration(maxApprovalExpiry))
	}
	return d, nil
}

// tables accepts both spellings of an array of tables: [[rule]] sections and
// an inline array of inline tables.
func tables(v any) ([]map[string]any, bool) {
	switch v := v.(type) {
	case []map[string]any:
		return v, true
	case []any:
		out := make([]map[string]any, 0, len(v))
		for _, e := range v {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, false
			}
			out = append(out, m)
		}
		return out, true
	}
	return nil, false
}

// typeName names the TOML type of a decoded value for error messages.
func typeName(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case int64:
		return fmt.Sprintf("integer %d", v)
	case float64:
		return fmt.Sprintf("float %s", formatRate(v))
	case bool:
		return fmt.Sprintf("boolean %t", v)
	case map[string]any:
		return "a table"
	case []map[string]any, []any:
		return "an array"
	default:
		return "a date or time"
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// suggestClass returns ` (did you mean "x"?)` for a near-miss class name.
func suggestClass(s string) string {
	order := classOrder()
	names := make([]string, len(order))
	for i, c := range order {
		names[i] = string(c)
	}
	return suggest(s, names...)
}

// suggest returns ` (did you mean "x"?)` when s is within two edits of one of
// the candidates, and "" otherwise.
func suggest(s string, candidates ...string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := EditDistance(s, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// EditDistance is the Levenshtein distance between a and b, in bytes, for
// near-miss names: policy keys and classes here, setting names in
// cmd/console. Long inputs are not compared (math.MaxInt): nobody
// misspells a key by 64 characters.
func EditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
