package replaypolicy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/quarantine-console/quarantine"
)

// tenantProblem says why s cannot be a [[retention.rule]]'s tenant, or
// returns "". A tenant is "*" (every tenant) or one tenant's name, which
// is one subject token (dlq.<tenant>.<item_type>): no dots, no wildcards,
// no spaces or control characters, valid UTF-8 without NUL or U+FFFD (the
// ingester stores a dead letter whose tenant token is otherwise under
// tenant "unknown"). Anything else would match no dead letter, silently.
func tenantProblem(s string) string {
	const fix = `write one tenant's name, or "*" for every tenant`
	switch {
	case s == "*":
		return ""
	case s == ">":
		return fmt.Sprintf(`tenant ">" is no tenant: a tenant is one subject token and "*" alone means every tenant; %s`, fix)
	case strings.Contains(s, "."):
		return fmt.Sprintf("tenant %q is more than one subject token (dlq.<tenant>.<item_type>): it matches no dead letter; %s", s, fix)
	case strings.ContainsAny(s, "*>"):
		return fmt.Sprintf(`tenant %q holds a wildcard: tenants take no globs, only "*" alone for every tenant; %s`, s, fix)
	case !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return fmt.Sprintf("tenant %q holds a space, a control character or text that is not UTF-8, which no tenant has; %s", s, fix)
	case len(s) > quarantine.MaxTenantBytes:
		return fmt.Sprintf("tenant %q is longer than %d bytes: the console stores such a tenant as %q (its first bytes and a hash, as the pages show it), "+
			"so this matches no dead letter; write that", s, quarantine.MaxTenantBytes, quarantine.BoundedKey(s, quarantine.MaxTenantBytes))
	}
	return ""
}

// itemTypeProblem says why s, a [[retention.rule]]'s item type, matches
// no dead letter, or returns "": a literal item type (no wildcard token)
// longer than a stored item type is stored as its bounded key.
func itemTypeProblem(s string) string {
	if len(s) <= quarantine.MaxItemTypeBytes || slices.ContainsFunc(strings.Split(s, "."), func(tok string) bool { return tok == "*" || tok == ">" }) {
		return ""
	}
	return fmt.Sprintf("item_type %q is longer than %d bytes: the console stores such an item type as %q (its first bytes and a hash, as the pages show it), "+
		"so this matches no dead letter; write that", s, quarantine.MaxItemTypeBytes, quarantine.BoundedKey(s, quarantine.MaxItemTypeBytes))
}

// retentionRuleReached reports whether rule, the [[retention.rule]] at
// 0-based index i, applies as written after r.Rules, the valid rules
// before it (numbers[j] is the 1-based number of r.Rules[j] in the file).
// The first rule whose tenant and item type match a dead letter decides
// all its periods, a key it leaves out falling back to the section, never
// to a later rule; so a later rule is refused, reported on its line, when
//
//   - an earlier rule covers it: it can never match ("put the narrower
//     rule first", as for [[rule]]); or
//   - an earlier rule that matches some of the same dead letters sets no
//     period for a status this one does: those dead letters would be kept
//     the section's period, not the one this rule says, which can be
//     sooner than the operator wrote; or
//   - an earlier rule matches some of the same dead letters but not only
//     ones this rule matches (neither is the narrower: "every tenant's
//     billing.>" before "acme's >"), and keeps some status of them for
//     another period than this one does: which of the two the operator
//     meant for the dead letters both match is not written anywhere (a
//     tenant's hold would silently lose to the other rule). An earlier
//     rule inside this one is the exception "narrower first" makes.
//
// Neither of the last two is said of an overlap a rule before both takes
// whole (settledBefore): no dead letter of it reaches either.
//
// Each is refused rather than read another way because retention terms
// versions record rules, not their meaning: the same recorded terms must
// keep removing the same dead letters.
func (p *parser) retentionRuleReached(r Retention, numbers []int, rule RetentionRule, i int) bool {
	where := "retention.rule " + strconv.Itoa(i+1)
	idx := strconv.Itoa(i)
	for j, earlier := range r.Rules {
		if !(earlier.Tenant == "*" || rule.Tenant == "*" || earlier.Tenant == rule.Tenant) || !earlier.pat.overlaps(rule.pat) {
			continue
		}
		if (earlier.Tenant == "*" || earlier.Tenant == rule.Tenant) && earlier.pat.covers(rule.pat) {
			p.problem(p.loc.line("retention", "rule", idx), where, "", "%s can never match: retention.rule %d (%s) matches every dead letter it would, "+
				"and the first rule that matches decides; put the narrower rule first", describeRetentionRule(rule), numbers[j], describeRetentionRule(earlier))
			return false
		}
		settled := settledBefore(r.Rules[:j], earlier, rule)
		exception := (rule.Tenant == "*" || rule.Tenant == earlier.Tenant) && rule.pat.covers(earlier.pat) || settled
		for _, st := range RetentionStatuses {
			group := retentionStatuses[st]
			if first, set := earlier.Periods.pick(st, group); set {
				if k, also := rule.Periods.pick(st, group); also && !exception && k != first {
					p.problem(p.loc.line("retention", "rule", idx), where, "", "retention.rule %d (%s) and this rule (%s) both match some dead letters, neither only "+
						"the other's, and keep their %s ones %s and %s: the first rule that matches decides, so those are kept %s; "+
						"say which you mean in a rule for the dead letters both match, put first",
						numbers[j], describeRetentionRule(earlier), describeRetentionRule(rule), st, first.String(), k.String(), first.String())
					return false
				}
				continue
			}
			k, set := rule.Periods.pick(st, group)
			if !set || settled {
				continue
			}
			key := st
			if _, own := rule.Periods[st]; !own {
				key = group
			}
			whose := "[retention]'s"
			fallback, set := r.Section.pick(st, group)
			if !set {
				whose = "the default, as [retention] sets none"
				fallback, _ = DefaultRetention.pick(st, group)
			}
			p.problem(p.loc.line("retention", "rule", idx, key), where, key, "retention.rule %d (%s) matches some of this rule's dead letters first and sets no period for their %s ones: "+
				"those are kept %s (%s), not this rule's %s = %q, since the first rule that matches decides and a key it leaves out falls back to [retention]; "+
				"set %s in retention.rule %d too, or put the narrower rule first",
				numbers[j], describeRetentionRule(earlier), st, fallback, whose, key, k.String(), key, numbers[j])
			return false
		}
	}
	return true
}

// settledBefore reports whether one of rules (those before a and b) takes
// every dead letter both a and b match: its tenant holds their common
// tenant, and its item types cover one of theirs (so their overlap). It
// may miss an overlap two rules settle together; the file is then refused
// with a message that says how to settle it.
func settledBefore(rules []RetentionRule, a, b RetentionRule) bool {
	tenant := a.Tenant
	if tenant == "*" {
		tenant = b.Tenant
	}
	return slices.ContainsFunc(rules, func(k RetentionRule) bool {
		return (k.Tenant == "*" || k.Tenant == tenant) && (k.pat.covers(a.pat) || k.pat.covers(b.pat))
	})
}

// describeRetentionRule names a retention rule for messages.
func describeRetentionRule(rule RetentionRule) string {
	return fmt.Sprintf("tenant %q, item_type %q", rule.Tenant, rule.ItemType)
}
