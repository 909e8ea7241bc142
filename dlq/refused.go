package dlq

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/quarantine-console/quarantine/audit"
)

// RefusedIDs are the dead letters a bulk action refused, by tenant and the
// sentence why. Every refused id is audited: one denied row per tenant
// (Events), so that tenant's auditors see what was tried on its dead
// letters.
type RefusedIDs map[RefusedKey][]int64

// RefusedKey is the tenant of refused dead letters ("" for ids of no dead
// letter) and why they were refused.
type RefusedKey struct{ Tenant, Why string }

// Add records that id, of tenant, was refused for why.
func (r RefusedIDs) Add(id int64, tenant, why string) {
	k := RefusedKey{tenant, why}
	r[k] = append(r[k], id)
}

// AddMissing records that id was refused because no dead letter has it
// (or has it any more): no tenant is known.
func (r RefusedIDs) AddMissing(id int64) { r.Add(id, "", "no such dead letter") }

// Merge adds every id of o to r.
func (r RefusedIDs) Merge(o RefusedIDs) {
	for k, ids := range o {
		r[k] = append(r[k], ids...)
	}
}

// Len is how many ids were refused.
func (r RefusedIDs) Len() int {
	n := 0
	for _, ids := range r {
		n += len(ids)
	}
	return n
}

// missingObjectType is the object of the denied row of ids no dead letter
// has: the refused dead letters as a selection, like the retention rows'
// sets of dead letters, which no dead letter's page reads.
const missingObjectType = "dead_letters"

// maxAuditedIDs bounds the ids one denied row lists; its count is always
// whole.
const maxAuditedIDs = 1000

// Events completes e (actor, action, request metadata) as the denied audit
// rows of the refused ids, one per tenant in tenant order: the tenant,
// object dead_letter, the first ids as its object id, each reason with its
// count, and up to 1,000 ids by reason in its after JSON. None when
// nothing was refused. Ids of no dead letter are the row outside any
// tenant, whose object is the refused selection (missingObjectType), not
// dead_letter: ids are a sequence, and an id named before it existed may
// go to another tenant's next dead letter, which the attempt is not about.
func (r RefusedIDs) Events(e audit.Event) []audit.Event {
	byTenant := map[string][]RefusedKey{}
	for k := range r {
		byTenant[k.Tenant] = append(byTenant[k.Tenant], k)
	}
	out := make([]audit.Event, 0, len(byTenant))
	for _, tenant := range slices.Sorted(maps.Keys(byTenant)) {
		keys := byTenant[tenant]
		slices.SortFunc(keys, func(a, b RefusedKey) int { return cmp.Compare(a.Why, b.Why) })
		out = append(out, r.event(e, tenant, keys))
	}
	return out
}

// event is the denied row of the ids under keys, all of tenant.
func (r RefusedIDs) event(e audit.Event, tenant string, keys []RefusedKey) audit.Event {
	var all []int64
	reasons := make([]string, 0, len(keys))
	listed := map[string]any{}
	budget := maxAuditedIDs
	for _, k := range keys {
		ids := slices.Sorted(slices.Values(r[k]))
		all = append(all, ids...)
		reasons = append(reasons, fmt.Sprintf("%s (%d)", k.Why, len(ids)))
		listed[k.Why] = ids[:min(len(ids), budget)]
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
	objectType := "dead_letter"
	if tenant == "" {
		objectType = missingObjectType
	}
	e.Tenant, e.Outcome, e.ObjectType, e.ObjectID = tenant, audit.OutcomeDenied, objectType, strings.Join(head, ",")
	e.Reason = fmt.Sprintf("%d selected dead letters refused: %s", len(all), strings.Join(reasons, "; "))
	e.After = map[string]any{"refused": listed, "count": len(all)}
	return e
}
