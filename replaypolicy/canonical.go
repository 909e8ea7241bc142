package replaypolicy

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine"
)

// The canonical forms are what versions hash: a table's Version is the hex
// SHA-256 of its Canonical text, retention terms' version that of their
// Canonical text. The database keeps the text of every version made active
// since migration 0039 (dlq/replay), so that what a version said can be
// read back, and checked against its name, long after its file is gone.
// ParseCanonical and ParseRetentionCanonical read the texts back; each
// accepts only a text it would write again byte for byte.

// ErrNotCanonical matches (with errors.Is) every error ParseCanonical and
// ParseRetentionCanonical return. It is an invalid quarantine.Error.
var ErrNotCanonical = quarantine.Errorf(quarantine.EINVALID, "not a canonical form")

// Canonical returns the text Version hashes: a first line naming the
// format, every rule in match order, every class with its effective
// knobs, the error-class rules the file tightened and the generation limit
// when it is not the default. Retention terms are not in it.
func (t *Table) Canonical() string { return t.canonical() }

// ParseCanonical reads a table back from its Canonical text, under name
// (for Name). Error-class rules the text leaves out are this release's
// defaults, as they are for the file the text came from: they are not part
// of the version. The table has no retention terms (they have versions of
// their own). A text that is not exactly what Canonical writes is refused
// with an error matching ErrNotCanonical.
func ParseCanonical(name, text string) (*Table, error) {
	t := &Table{name: name, knobs: map[Class]Knobs{}, errorRules: map[string]ErrorRule{}, generationLimit: DefaultGenerationLimit}
	lines, ok := strings.CutSuffix(text, "\n")
	if !ok {
		return nil, notCanonical("the policy text does not end with a line break")
	}
	for i, line := range strings.Split(lines, "\n") {
		if i == 0 {
			if line != "quarantine replaypolicy canonical v1" {
				return nil, notCanonical("the policy text does not start with its format line")
			}
			continue
		}
		if err := t.canonicalLine(line); err != nil {
			return nil, notCanonical("line %d: %v", i+1, err)
		}
	}
	if t.canonical() != text {
		return nil, notCanonical("the policy text is not the one its table writes")
	}
	t.version = t.computeVersion()
	return t, nil
}

// canonicalLine adds one line of a Canonical text (after the first) to t.
func (t *Table) canonicalLine(line string) error {
	f, err := canonicalFields(line)
	if err != nil {
		return err
	}
	switch {
	case len(f) == 3 && f[0] == "rule":
		return t.addRule(Rule{ItemType: f[1], Class: Class(f[2])})
	case len(f) == 5 && f[0] == "rule" && f[2] == "subject":
		return t.addRule(Rule{ItemType: f[1], Subject: f[3], Class: Class(f[4])})
	case len(f) == 9 && f[0] == "class":
		var k Knobs
		var expiry int64
		kv := keyValues(f[2:])
		k.Approvals, err = strconv.Atoi(kv.get("approvals"))
		if err == nil {
			k.Bulk, err = strconv.ParseBool(kv.get("bulk"))
		}
		if err == nil {
			k.BulkCap, err = strconv.Atoi(kv.get("bulk_cap"))
		}
		if err == nil {
			k.DefaultRate, err = strconv.ParseFloat(kv.get("default_rate"), 64)
		}
		if err == nil {
			k.MaxRate, err = strconv.ParseFloat(kv.get("max_rate"), 64)
		}
		if err == nil {
			expiry, err = strconv.ParseInt(kv.get("approval_expiry_ns"), 10, 64)
			k.ApprovalExpiry = time.Duration(expiry)
		}
		if err == nil {
			k.TypedConfirmation, err = strconv.ParseBool(kv.get("typed_confirmation"))
		}
		if err != nil {
			return err
		}
		if !Class(f[1]).Valid() {
			return fmt.Errorf("class %q is not one of %s", f[1], classList())
		}
		t.knobs[Class(f[1])] = k
		return nil
	case len(f) == 6 && f[0] == "error_class":
		kv := keyValues(f[2:])
		r := ErrorRule{Replay: Replay(kv.get("replay")), MinClass: Class(kv.get("min_class"))}
		r.Approvals, err = strconv.Atoi(kv.get("approvals"))
		if err == nil {
			r.ReconciliationNote, err = strconv.ParseBool(kv.get("reconciliation_note"))
		}
		if err != nil {
			return err
		}
		if !knownErrorClass(f[1]) {
			return fmt.Errorf("error class %q is not one of %s", f[1], strings.Join(ErrorClasses(), ", "))
		}
		t.errorRules[f[1]] = r
		return nil
	case len(f) == 1 && strings.HasPrefix(f[0], "generation_limit="):
		t.generationLimit, err = strconv.Atoi(strings.TrimPrefix(f[0], "generation_limit="))
		return err
	}
	return fmt.Errorf("%q is not a line of a policy's canonical form", line)
}

// addRule appends r with its compiled globs.
func (t *Table) addRule(r Rule) error {
	if !r.Class.Valid() {
		return fmt.Errorf("class %q is not one of %s", r.Class, classList())
	}
	var p, s pattern
	var err error
	if r.ItemType != "" {
		if p, err = compilePattern(r.ItemType); err != nil {
			return fmt.Errorf("item_type %q %v", r.ItemType, err)
		}
	}
	if r.Subject != "" {
		if s, err = compilePattern(r.Subject); err != nil {
			return fmt.Errorf("subject %q %v", r.Subject, err)
		}
	}
	t.rules, t.patterns, t.subjects = append(t.rules, r), append(t.patterns, p), append(t.subjects, s)
	return nil
}

// Canonical returns the text retention terms' version hashes (see
// dlq/replay.RetentionVersion): the defaults in force (so that a release
// that changes them changes the version), then the section's periods and
// every rule's, in order; keys sorted, periods exact.
func (r *Retention) Canonical() string {
	var b strings.Builder
	b.WriteString("quarantine retention terms 1\n")
	periods := func(p Periods) {
		for _, k := range slices.Sorted(maps.Keys(p)) {
			v := "never"
			if !p[k].Forever {
				v = p[k].For.String()
			}
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
		b.WriteString("\n")
	}
	b.WriteString("default")
	periods(r.defaultPeriods())
	b.WriteString("section")
	periods(r.Section)
	for _, rule := range r.Rules {
		fmt.Fprintf(&b, "rule %q %q", rule.Tenant, rule.ItemType)
		periods(rule.Periods)
	}
	return b.String()
}

// ParseRetentionCanonical reads retention terms back from their Canonical
// text, with the defaults the text records (those of the release that
// made them active), which fill what the section leaves out. A text that
// is not exactly what Canonical writes is refused with an error matching
// ErrNotCanonical.
func ParseRetentionCanonical(text string) (*Retention, error) {
	r := &Retention{defaults: Periods{}}
	lines, ok := strings.CutSuffix(text, "\n")
	if !ok {
		return nil, notCanonical("the retention text does not end with a line break")
	}
	all := strings.Split(lines, "\n")
	if len(all) < 3 || all[0] != "quarantine retention terms 1" {
		return nil, notCanonical("the retention text does not start with its format, default and section lines")
	}
	for i, line := range all[1:] {
		f, err := canonicalFields(line)
		if err == nil && len(f) == 0 {
			err = fmt.Errorf("an empty line")
		}
		if err != nil {
			return nil, notCanonical("line %d: %v", i+2, err)
		}
		switch {
		case i == 0 && f[0] == "default":
			err = readPeriods(r.defaults, f[1:])
		case i == 1 && f[0] == "section":
			r.Section = Periods{}
			err = readPeriods(r.Section, f[1:])
		case i > 1 && len(f) >= 3 && f[0] == "rule":
			rule := RetentionRule{Tenant: f[1], ItemType: f[2], Periods: Periods{}}
			if rule.pat, err = compilePattern(rule.ItemType); err == nil {
				err = readPeriods(rule.Periods, f[3:])
			}
			r.Rules = append(r.Rules, rule)
		default:
			err = fmt.Errorf("%q is not in its place in retention terms' canonical form", line)
		}
		if err != nil {
			return nil, notCanonical("line %d: %v", i+2, err)
		}
	}
	if r.Canonical() != text {
		return nil, notCanonical("the retention text is not the one its terms write")
	}
	return r, nil
}

// readPeriods reads "key=period" fields into p.
func readPeriods(p Periods, fields []string) error {
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || !slices.Contains(retentionKeys(), k) {
			return fmt.Errorf("%q is not a retention period", f)
		}
		if v == "never" {
			p[k] = Keep{Forever: true}
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a retention period", f)
		}
		p[k] = Keep{For: d}
	}
	return nil
}

// defaultPeriods are the defaults r falls back on: those its canonical
// text recorded, or this release's (DefaultRetention) for terms read from
// a policy file.
func (r *Retention) defaultPeriods() Periods {
	if r.defaults != nil {
		return r.defaults
	}
	return DefaultRetention
}

// canonicalFields splits a canonical line at single spaces; a field that
// starts with a quote is a Go-quoted string, returned unquoted.
func canonicalFields(line string) ([]string, error) {
	var out []string
	for line != "" {
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return nil, fmt.Errorf("a quoted field does not end: %q", line)
			}
			s, _ := strconv.Unquote(q) // QuotedPrefix returned a valid quoted string
			out, line = append(out, s), line[len(q):]
		} else {
			f, rest, _ := strings.Cut(line, " ")
			out, line = append(out, f), " "+rest
			if rest == "" {
				line = ""
			}
		}
		if line == "" {
			break
		}
		rest, ok := strings.CutPrefix(line, " ")
		if !ok {
			return nil, fmt.Errorf("fields are not separated by a space: %q", line)
		}
		line = rest
	}
	return out, nil
}

// keyValues are "key=value" fields by key.
type keyValues []string

// get is the value of key ("" when it is not there).
func (kv keyValues) get(key string) string {
	for _, f := range kv {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

func notCanonical(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrNotCanonical)
}
