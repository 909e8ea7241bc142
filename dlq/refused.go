package dlq

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/quarantine-console/quarantine/audit"
)

// RefusedIDs are the dead letters a bulk action refused, by the sentence
// why. Every refused id is audited: one denied row per action (Event).
type RefusedIDs map[string][]int64

// Add records that id was refused for why.
func (r RefusedIDs) Add(id int64, why string) { r[why] = append(r[why], id) }

// Len is how many ids were refused.
func (r RefusedIDs) Len() int {
	n := 0
	for _, ids := range r {
		n += len(ids)
	}
	return n
}

// maxAuditedIDs bounds the ids one denied row lists; its count is always
// whole.
const maxAuditedIDs = 1000

// Event completes e (actor, action, request metadata) as the one denied
// audit row of the refused ids: object dead_letter, the first ids as its
// object id, each reason with its count, and up to 1,000 ids by reason in
// its after JSON.
func (r RefusedIDs) Event(e audit.Event) audit.Event {
	var all []int64
	reasons := make([]string, 0, len(r))
	listed := map[string]any{}
	budget := maxAuditedIDs
	for _, why := range slices.Sorted(maps.Keys(r)) {
		ids := slices.Sorted(slices.Values(r[why]))
		all = append(all, ids...)
		reasons = append(reasons, fmt.Sprintf("%s (%d)", why, len(ids)))
		listed[why] = ids[:min(len(ids), budget)]
		budget = max(0, budget-len(ids))
	}
	slices.Sort(all)
	head := make([]string, 0, 10)
	for _, id := range all[:min(len(all), 10)] {
		head = append(head, strconv.FormatInt(id, 10))
	}
	if len(all) > 10 {
		head = append(head, "...")
	}
	e.Outcome, e.ObjectType, e.ObjectID = audit.OutcomeDenied, "dead_letter", strings.Join(head, ",")
	e.Reason = fmt.Sprintf("%d selected dead letters refused: %s", len(all), strings.Join(reasons, "; "))
	e.After = map[string]any{"refused": listed, "count": len(all)}
	return e
}
