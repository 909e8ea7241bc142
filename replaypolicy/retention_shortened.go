package replaypolicy

import (
	"fmt"
	"strings"
)

// Shortened says, of terms r replacing old, where they keep dead letters
// a shorter time than old kept them: a line of old (a rule's tenant and
// item type, or the section's "* >") that r keeps too, status by status,
// and a rule r adds whose tenant and item type are one tenant's literal
// item type, against what old kept those. Each is "tenant item_type
// status: 90d → 9d". A shorter period takes effect at the keeper's next
// pass: a start that activates it should say so loudly (a typo of "9d"
// for "90d" removes every dead letter past 9 days at once). Nil when
// nothing is shorter, or old is nil.
func (r *Retention) Shortened(old *Retention) []string {
	if old == nil {
		return nil
	}
	was := map[[2]string]RetentionLine{}
	for _, l := range old.Lines() {
		if _, seen := was[[2]string{l.Tenant, l.ItemType}]; !seen {
			was[[2]string{l.Tenant, l.ItemType}] = l
		}
	}
	var out []string
	for _, l := range r.Lines() {
		before, known := was[[2]string{l.Tenant, l.ItemType}]
		literal := l.Tenant != "*" && !strings.ContainsAny(l.ItemType, "*>")
		for i, st := range RetentionStatuses {
			var prev Keep
			switch {
			case known:
				prev = before.Keep[i]
			case literal:
				k, ok := old.For(l.Tenant, l.ItemType, st)
				if !ok {
					continue
				}
				prev = k
			default:
				continue
			}
			if now := l.Keep[i]; shorter(now, prev) {
				out = append(out, fmt.Sprintf("%s %s %s: %s → %s", l.Tenant, l.ItemType, st, prev, now))
			}
		}
	}
	return out
}

// shorter says whether now keeps for less time than before.
func shorter(now, before Keep) bool {
	return !now.Forever && (before.Forever || now.For < before.For)
}
