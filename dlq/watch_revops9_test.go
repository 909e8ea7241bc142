package dlq

import (
	"testing"
)

// TestRevOps9WatchTemplateSpacesAreNotLiteral (review rev-ops9):
// DLQ_WATCH_STREAMS is "STREAM[:template],...": ParseWatchStreams trims
// the spaces around each entry ("ORDERS, EMAILS" works, as in every other
// list setting) but not those after the colon, and keeps a template token
// such as " *" or "{tenant} " as a literal. "ORDERS: *.{tenant}.{item_type}"
// therefore starts the console without a word, and no subject ever
// matches the template: every MAX_DELIVERIES/MSG_TERMINATED advisory of
// ORDERS is stored under tenant "unknown", item type "orders", flagged
// subject_unmapped (dlq/advisory.go), invisible to the tenant whose
// message it is. The same holds for a token with a wildcard NATS does not
// mean there (">" not last) and for {tenant} given twice (the last wins).
// Each must be refused with the entry named, or mean what it says.
func TestRevOps9WatchTemplateSpacesAreNotLiteral(t *testing.T) {
	t.Parallel()
	const subject = "app.acme.orders.refund"
	for _, spec := range []string{
		"ORDERS: *.{tenant}.{item_type}",
		"ORDERS:*.{tenant}.{item_type} ,EMAILS",
		"ORDERS:*. {tenant}.{item_type}",
	} {
		ws, err := ParseWatchStreams(spec)
		if err != nil {
			continue // refused, naming it: fixed
		}
		tenant, itemType, ok := ws[0].Map(subject)
		if !ok || tenant != "acme" || itemType != "orders.refund" {
			t.Errorf("DLQ_WATCH_STREAMS=%q is accepted, and %s maps to tenant %q item type %q (ok %v): every advisory of %s lands under tenant unknown",
				spec, subject, tenant, itemType, ok, ws[0].Name)
		}
	}
	for _, spec := range []string{
		"ORDERS:{tenant}.{tenant}.{item_type}", // two tenants: which one?
		"ORDERS:>.{tenant}.{item_type}",        // '>' before the end: a literal '>' here, matching nothing
	} {
		if ws, err := ParseWatchStreams(spec); err == nil {
			tenant, itemType, ok := ws[0].Map(subject)
			t.Errorf("DLQ_WATCH_STREAMS=%q is accepted: %s maps to tenant %q item type %q (ok %v)", spec, subject, tenant, itemType, ok)
		}
	}
}
