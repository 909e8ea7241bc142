package dlq

import (
	"context"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestItemTypeFromHeaderTakesTheTokenRule: an item type taken from
// Dlq-Item-Type (the subject has none) is judged by the rule an item type
// from the subject is (itemTypeFault): one naming no item type is kept as
// it came, a blank one as "unknown", both flagged invalid:item_type as
// well as missing:item_type; one that names an item type is not flagged
// invalid. (fixdocs10)
func TestItemTypeFromHeaderTakesTheTokenRule(t *testing.T) {
	for _, tc := range []struct {
		header, stored string
		invalid        bool
	}{
		{"email.send", "email.send", false},
		{"orders", "orders", false},
		{"orders.>", "orders.>", true},
		{"email.*", "email.*", true},
		{">", ">", true},
		{"a..b", "a..b", true},
		{".orders", ".orders", true},
		{"orders.", "orders.", true},
		{"email send", "email send", true},
		{"email.\tsend", "email.\tsend", true},
		{"", "unknown", true},
		{"   ", "unknown", true},
	} {
		r := ParseDLQ("dlq", received("dlq.acme", map[string][]string{HeaderItemType: {tc.header}}, "{}"))
		assert.Equal(t, tc.stored, r.ItemType, "Dlq-Item-Type %q", tc.header)
		assert.Contains(t, r.Flags, "missing:item_type", "Dlq-Item-Type %q", tc.header)
		assert.Equal(t, tc.invalid, slices.Contains(r.Flags, "invalid:item_type"), "Dlq-Item-Type %q: flags %v, reasons %q", tc.header, r.Flags, r.MalformedReasons)
	}
	// The subject's item type, by the same rule; a header beside it is
	// only compared.
	r := ParseDLQ("dlq", received("dlq.acme.orders.>", map[string][]string{HeaderItemType: {"orders.refund"}}, "{}"))
	assert.Subset(t, r.Flags, []string{"invalid:item_type", "mismatch:item_type"})
	r = ParseDLQ("dlq", received("dlq.acme.orders.refund", map[string][]string{HeaderItemType: {"orders.*"}}, "{}"))
	assert.NotContains(t, r.Flags, "invalid:item_type", "the subject's item type is the item type")
	// No header at all: missing, not invalid.
	r = ParseDLQ("dlq", received("dlq.acme", nil, "{}"))
	assert.Equal(t, "unknown", r.ItemType)
	assert.NotContains(t, r.Flags, "invalid:item_type")
}

// TestItemTypeFromHeaderInvalidIsStored: dead letters whose item type
// comes from a Dlq-Item-Type that names none are stored, flagged, never
// dropped. (fixdocs10)
func TestItemTypeFromHeaderInvalidIsStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.start(t, IngestConfig{}, nil)
	want := map[string]string{"orders.>": "orders.>", "*": "*", "": "unknown", "email send": "email send"}
	for hv := range want {
		m := nats.NewMsg("dlq.acme")
		m.Header.Set(HeaderItemType, hv)
		m.Data = []byte(hv)
		_, err := b.js.PublishMsg(context.Background(), m)
		require.NoError(t, err, "%q", hv)
	}
	b.waitRows(t, len(want))
	rows, err := b.db.Pool.Query(context.Background(), `SELECT payload, item_type, flags FROM dead_letters`)
	require.NoError(t, err)
	seen := 0
	for rows.Next() {
		var payload []byte
		var it string
		var f []string
		require.NoError(t, rows.Scan(&payload, &it, &f))
		stored, ok := want[string(payload)]
		require.True(t, ok, "stored %q", payload)
		assert.Equal(t, stored, it, "Dlq-Item-Type %q", payload)
		assert.Subset(t, f, []string{"missing:item_type", "invalid:item_type"}, "Dlq-Item-Type %q", payload)
		seen++
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, len(want), seen)
}
