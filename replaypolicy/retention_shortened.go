package replaypolicy

import (
	"fmt"
	"strings"
)

// Shortened says, of terms r replacing old, where they keep dead letters
// a shorter time than old kept them, each as "tenant item_type status:
// 90d → 9d":
//
//   - a line both terms have (a rule's tenant and item type, or the
//     section's "* >"), status by status;
//   - a rule r adds, against what old kept those dead letters: by old's
//     rules for a literal item type (For), else by old's section;
//   - a rule old had that r drops ("(rule removed)"), against what r keeps
//     them now, the same way.
//
// The last two are judged by the section where a pattern leaves the
// dead letters unknown, which can miss a rule of the other terms that
// took some of them; they err toward saying. A shorter period takes
// effect at the keeper's next pass: a start that activates one should say
// so loudly (a "9d" typed for "90d" removes every dead letter past 9 days
// at once). Nil when nothing is shorter, or old is nil.
func (r *Retention) Shortened(old *Retention) []string {
	if old == nil {
		return nil
	}
	var out []string
	compare := func(l RetentionLine, label string, other *Retention, otherLines map[[2]string]RetentionLine, was bool) {
		before, known := otherLines[[2]string{l.Tenant, l.ItemType}]
		literal := !strings.ContainsAny(l.ItemType, "*>")
		section := otherLines[[2]string{"*", ">"}]
		for i, st := range RetentionStatuses {
			var them Keep
			switch {
			case known:
				them = before.Keep[i]
			case literal:
				k, ok := other.For(l.Tenant, l.ItemType, st)
				if !ok {
					continue
				}
				them = k
			default:
				them = section.Keep[i]
			}
			from, to := them, l.Keep[i] // l is the new terms' line
			if was {
				from, to = l.Keep[i], them // l is the old terms' line
			}
			if shorter(to, from) {
				out = append(out, fmt.Sprintf("%s %s%s %s: %s → %s", l.Tenant, l.ItemType, label, st, from, to))
			}
		}
	}
	oldLines, newLines := linesByKey(old), linesByKey(r)
	for _, l := range r.Lines() {
		compare(l, "", old, oldLines, false)
	}
	for _, l := range old.Lines() {
		if _, kept := newLines[[2]string{l.Tenant, l.ItemType}]; !kept {
			compare(l, " (rule removed)", r, newLines, true)
		}
	}
	return out
}

// linesByKey are r's lines by tenant and item type (the first of a key).
func linesByKey(r *Retention) map[[2]string]RetentionLine {
	out := map[[2]string]RetentionLine{}
	for _, l := range r.Lines() {
		if _, seen := out[[2]string{l.Tenant, l.ItemType}]; !seen {
			out[[2]string{l.Tenant, l.ItemType}] = l
		}
	}
	return out
}

// shorter says whether now keeps for less time than before.
func shorter(now, before Keep) bool {
	return !now.Forever && (before.Forever || now.For < before.For)
}
