package replaypolicy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine"
)

// Retention is how long dead letters are kept before the console removes
// them: the [retention] section of the policy file. It is per status, and
// per tenant and item type when a [[retention.rule]] says so:
//
//	[retention]
//	closed = "30d"        # replayed, discarded and resolved dead letters
//	unresolved = "90d"    # quarantined and replay_failed ones
//
//	[[retention.rule]]
//	tenant = "acme"       # a tenant, or "*" (the default) for every tenant
//	item_type = "billing.>"
//	closed = "365d"
//	discarded = "7d"      # a status's own key wins over its group's
//
// Keys are closed, unresolved, or one of the statuses replayed, discarded,
// resolved, quarantined and replay_failed; a value is a duration ("12h",
// "30d") from 1h to 36500d, or "never". The first rule whose tenant and
// item type match decides; a key it does not set falls back to the
// section's, then to the defaults (DefaultRetention), never to a later
// rule. Parse refuses the files where that would surprise (see
// retentionRuleReached): a rule an earlier one covers, and a rule that
// sets a status an earlier, overlapping rule leaves to the section. A dead letter in a
// replay request that is not closed (replay_requested, replaying, or an
// item of an open request), or whose replay waits for a person
// (needs_reconciliation), is never removed, whatever the terms.
//
// Retention is not part of the table's Version: changing how long dead
// letters are kept does not void replay approvals.
type Retention struct {
	Section Periods
	Rules   []RetentionRule
	// defaults are those the terms' canonical text recorded
	// (ParseRetentionCanonical); nil: DefaultRetention.
	defaults Periods
}

// RetentionRule is one [[retention.rule]].
type RetentionRule struct {
	Tenant   string // "*" for every tenant
	ItemType string // glob as in [[rule]]; ">" for every item type
	Periods  Periods
	pat      pattern
}

// Periods are retention periods by key (closed, unresolved or a status).
type Periods map[string]Keep

// Keep is one retention period; Forever keeps for good.
type Keep struct {
	For     time.Duration
	Forever bool
}

// String is the period as the policy file writes it.
func (k Keep) String() string {
	if k.Forever {
		return "never"
	}
	return formatDuration(k.For)
}

// Status groups of retention keys.
const (
	RetainClosed     = "closed"
	RetainUnresolved = "unresolved"
)

// retentionStatuses are the statuses a retention key may name, with their
// group. Statuses of an open replay request, and needs_reconciliation, are
// not among them: those dead letters are never removed.
var retentionStatuses = map[string]string{
	"replayed": RetainClosed, "discarded": RetainClosed, "resolved": RetainClosed,
	"quarantined": RetainUnresolved, "replay_failed": RetainUnresolved,
}

// RetentionStatuses are the statuses retention may remove, in life order.
var RetentionStatuses = []string{"quarantined", "replay_failed", "replayed", "discarded", "resolved"}

// DefaultRetention is what applies where the policy file says nothing:
// closed dead letters 30 days, unresolved ones 90 days.
var DefaultRetention = Periods{RetainClosed: {For: 30 * 24 * time.Hour}, RetainUnresolved: {For: 90 * 24 * time.Hour}}

// Bounds of a retention period.
const (
	minRetention = time.Hour
	maxRetention = 36500 * 24 * time.Hour
)

// For returns how long a dead letter of tenant and item type with status
// is kept; ok is false for a status retention never removes (an open
// replay's, or one it does not know).
//
// An item type that names none (an empty token: "billing..charge", or
// blank; ingest keeps it as sent, flagged invalid:item_type) matches no
// rule's item types, yet is the tenant's: it is kept the longest of what
// the section and every rule of its tenant keep with that status, as an
// item type no class rule knows is manual. A producer does not take its
// dead letters out of its tenant's terms by misspelling their item type.
// So is one stored shortened (over 256 bytes: quarantine.BoundedKey),
// whose cut dropped the dots after it, and would otherwise take the
// period of a rule for its first tokens (search.* for
// search.<long>.admin.drop_index), which the replay policy classes as
// no rule names it (Table.ClassOf).
// (TestRev38ShortenedItemTypeMatchesNoItemTypeRule)
func (r *Retention) For(tenant, itemType, status string) (k Keep, ok bool) {
	group, known := retentionStatuses[status]
	if !known {
		return Keep{}, false
	}
	if !namesItemType(itemType) || quarantine.IsBoundedKey(itemType) {
		return r.longestFor(tenant, status, group), true
	}
	for _, rule := range r.Rules {
		if (rule.Tenant == "*" || rule.Tenant == tenant) && rule.pat.match(itemType) {
			return r.keep(rule.Periods, status, group), true
		}
	}
	return r.keep(nil, status, group), true
}

// keep is how long a rule of periods p keeps a dead letter with status (of
// group): p's own key for the status, else for its group, else the
// section's, else the default's. The keeper (For, for the rule that
// decides a dead letter) and the lines people read (Lines, for each rule)
// read a rule by it alike.
func (r *Retention) keep(p Periods, status, group string) Keep {
	if k, ok := p.pick(status, group); ok {
		return k
	}
	if k, ok := r.Section.pick(status, group); ok {
		return k
	}
	k, _ := r.defaultPeriods().pick(status, group)
	return k
}

// longestFor is the longest period the section (or the default) and every
// rule of tenant keep a dead letter with status (of group) for.
func (r *Retention) longestFor(tenant, status, group string) Keep {
	out := r.keep(nil, status, group)
	for _, rule := range r.Rules {
		if k, ok := rule.Periods.pick(status, group); ok && (rule.Tenant == "*" || rule.Tenant == tenant) && !out.Forever && (k.Forever || k.For > out.For) {
			out = k
		}
	}
	return out
}

func (t Periods) pick(status, group string) (Keep, bool) {
	if k, ok := t[status]; ok {
		return k, true
	}
	k, ok := t[group]
	return k, ok
}

// Shortest returns the shortest period any dead letter is kept: nothing is
// removed before it is this old.
func (r *Retention) Shortest() Keep {
	out := Keep{Forever: true}
	for _, k := range r.periods() {
		if !k.Forever && (out.Forever || k.For < out.For) {
			out = k
		}
	}
	return out
}

// Longest returns the longest period any dead letter is kept (Forever when
// some are kept for good): everything older may go, but what an open
// replay request holds.
func (r *Retention) Longest() Keep {
	var out Keep
	for _, k := range r.periods() {
		if k.Forever {
			return k
		}
		out.For = max(out.For, k.For)
	}
	return out
}

// periods are every period that can apply, per status of every rule and
// of the section.
func (r *Retention) periods() []Keep {
	var out []Keep
	for _, st := range RetentionStatuses {
		group := retentionStatuses[st]
		for _, rule := range r.Rules {
			if k, ok := rule.Periods.pick(st, group); ok {
				out = append(out, k)
			}
		}
		if k, ok := r.Section.pick(st, group); ok {
			out = append(out, k)
		} else {
			k, _ = r.defaultPeriods().pick(st, group)
			out = append(out, k)
		}
	}
	return out
}

// RetentionLine is one line of the retention terms as people read them:
// who it covers and how long each status is kept.
type RetentionLine struct {
	Tenant, ItemType string
	// Keep is per status of RetentionStatuses, in that order.
	Keep []Keep
}

// Lines returns the rules, then the section with the defaults filled in
// (tenant and item type "*" and ">"), for the policy page, the dashboard
// and `console policy show`. A rule's line is what the rule keeps each
// status for (keep: its own period, else the section's, else the
// default), which is what the keeper gives every dead letter that rule
// decides (For); never the periods of an earlier rule that also matches
// some of its item types: those dead letters are the earlier rule's, as
// the order of the lines says ("narrower first").
func (r *Retention) Lines() []RetentionLine {
	var out []RetentionLine
	for _, rule := range r.Rules {
		out = append(out, r.line(rule.Tenant, rule.ItemType, rule.Periods))
	}
	return append(out, r.line("*", ">", nil))
}

// line is the line of tenant and itemType whose rule has periods p (nil:
// the section's line).
func (r *Retention) line(tenant, itemType string, p Periods) RetentionLine {
	l := RetentionLine{Tenant: tenant, ItemType: itemType}
	for _, st := range RetentionStatuses {
		l.Keep = append(l.Keep, r.keep(p, st, retentionStatuses[st]))
	}
	return l
}

// retentionKeys are the keys a terms table may hold.
func retentionKeys() []string {
	return append([]string{RetainClosed, RetainUnresolved}, RetentionStatuses...)
}

// retention validates the [retention] section.
func (p *parser) retention(v any) Retention {
	var r Retention
	sec, ok := v.(map[string]any)
	if !ok {
		p.problem(p.loc.line("retention"), "retention", "", "retention must be a table, written [retention]; got %s", typeName(v))
		return r
	}
	r.Section = Periods{}
	for _, key := range sortedKeys(sec) {
		if key == "rule" {
			continue
		}
		p.term(r.Section, key, sec[key], "retention", p.loc.line("retention", key))
	}
	if rv, ok := sec["rule"]; ok {
		entries, ok := tables(rv)
		if !ok {
			p.problem(p.loc.line("retention", "rule"), "retention", "rule", "retention.rule must be an array of tables, written [[retention.rule]]; got %s", typeName(rv))
			return r
		}
		var numbers []int // 1-based number of r.Rules[i] in the file, for messages
		for i, e := range entries {
			rule, ok := p.retentionRule(e, i)
			if ok && p.retentionRuleReached(r, numbers, rule, i) {
				r.Rules = append(r.Rules, rule)
				numbers = append(numbers, i+1)
			}
		}
	}
	return r
}

// retentionRule validates one [[retention.rule]].
func (p *parser) retentionRule(e map[string]any, i int) (RetentionRule, bool) {
	where := "retention.rule " + strconv.Itoa(i+1)
	idx := strconv.Itoa(i)
	line := func(key string) int { return p.loc.line("retention", "rule", idx, key) }
	rule := RetentionRule{Tenant: "*", ItemType: ">", Periods: Periods{}}
	ok := true
	for _, key := range sortedKeys(e) {
		switch key {
		case "tenant", "item_type":
			s, isStr := e[key].(string)
			if !isStr || s == "" {
				p.problem(line(key), where, key, "%s must be a non-empty string; got %s", key, typeName(e[key]))
				ok = false
				continue
			}
			if key == "tenant" {
				if msg := tenantProblem(s); msg != "" {
					p.problem(line(key), where, key, "%s", msg)
					ok = false
					continue
				}
				rule.Tenant = s
			} else {
				if msg := itemTypeProblem(s); msg != "" {
					p.problem(line(key), where, key, "%s", msg)
					ok = false
					continue
				}
				rule.ItemType = s
			}
		default:
			if !p.term(rule.Periods, key, e[key], where, line(key)) {
				ok = false
			}
		}
	}
	pat, err := compilePattern(rule.ItemType)
	if err != nil {
		p.problem(line("item_type"), where, "item_type", "item_type %q %v", rule.ItemType, err)
		return rule, false
	}
	rule.pat = pat
	if len(rule.Periods) == 0 {
		p.problem(p.loc.line("retention", "rule", idx), where, "", "the rule sets no period: give one of %s", strings.Join(retentionKeys(), ", "))
		ok = false
	}
	return rule, ok
}

// term reads one retention period into t.
func (p *parser) term(t Periods, key string, v any, where string, line int) bool {
	if !slices.Contains(retentionKeys(), key) {
		p.problem(line, where, key, "unknown key %q: retention periods are %s (replay_requested, replaying and needs_reconciliation dead letters are never removed)%s",
			key, strings.Join(retentionKeys(), ", "), suggest(key, retentionKeys()...))
		return false
	}
	s, ok := v.(string)
	if !ok {
		p.problem(line, where, key, `%s must be a duration string such as "30d", or "never"; got %s`, key, typeName(v))
		return false
	}
	k, err := parseRetention(s)
	if err != nil {
		p.problem(line, where, key, "%s = %q: %v", key, s, err)
		return false
	}
	t[key] = k
	return true
}

// parseRetention reads "never", whole days ("30d") or a Go duration.
func parseRetention(s string) (Keep, error) {
	if s == "never" {
		return Keep{Forever: true}, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return Keep{}, fmt.Errorf(`not a duration: use a whole number of days ("30d"), Go duration syntax ("36h") or "never"`)
		}
		// Past the bound before multiplying: a count of days past 106,751
		// wraps round in a duration ("213505d" read as a day).
		d = time.Duration(min(n, int(maxRetention/(24*time.Hour))+1)) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return Keep{}, fmt.Errorf(`not a duration: use a whole number of days ("30d"), Go duration syntax ("36h") or "never"`)
		}
	}
	if d < minRetention || d > maxRetention {
		return Keep{}, fmt.Errorf("must be between %s and %s, or \"never\"", formatDuration(minRetention), formatDuration(maxRetention))
	}
	return Keep{For: d}, nil
}
