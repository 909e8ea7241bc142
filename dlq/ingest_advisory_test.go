package dlq

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIngestAdvisoryJSONPostgresRefusesKept: anyone who may publish on an
// advisory subject can send JSON that Go reads and PostgreSQL's jsonb
// refuses: a lone surrogate escape ("\ud800", which Go reads as U+FFFD)
// or a number beyond numeric's range, in a field the console does not
// read. Such an advisory is stored in its parsed form, the JSON kept with
// those values replaced and flagged, never in the raw form, which drops
// the advisory and its error.
func TestIngestAdvisoryJSONPostgresRefusesKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)
	_, err := b.js.Publish(ctx, "app.acme.orders.refund", []byte(`{"amount":10}`))
	require.NoError(t, err)

	for i, body := range []string{
		`{"type":"io.nats.jetstream.advisory.v1.terminated","stream":"ORDERS","consumer":"refunder","stream_seq":1,"deliveries":2,"reason":"\ud800 closed"}`,
		`{"type":"io.nats.jetstream.advisory.v1.terminated","stream":"ORDERS","consumer":"voider","stream_seq":1,"deliveries":2,"reason":"closed","x":1e200000,"y":[1e-20000]}`,
		`{"type":"io.nats.jetstream.advisory.v1.terminated","stream":"ORDERS","consumer":"paired","stream_seq":1,"deliveries":2,"reason":"\ud83d\ude00 \\ud800"}`,
	} {
		consumer := []string{"refunder", "voider", "paired"}[i]
		_, err = b.js.Publish(ctx, AdvisoryTerminated+".ORDERS."+consumer, []byte(body))
		require.NoError(t, err)
	}
	b.waitRows(t, 3)

	d, err := b.store.BySource(ctx, "ORDERS", 1, "refunder")
	require.NoError(t, err)
	assert.NotContains(t, d.Flags, "raw_form")
	assert.Contains(t, d.Flags, "not_storable:advisory")
	assert.Equal(t, "acme", d.Tenant)
	assert.Contains(t, d.Error, "\uFFFD closed")
	assert.Contains(t, string(d.Advisory), "\"reason\": \"\uFFFD closed\"")

	v, err := b.store.BySource(ctx, "ORDERS", 1, "voider")
	require.NoError(t, err)
	assert.NotContains(t, v.Flags, "raw_form")
	assert.Contains(t, v.Flags, "not_storable:advisory")
	assert.Contains(t, string(v.Advisory), `"x": "1e200000"`, "the number kept as text")
	assert.Contains(t, string(v.Advisory), `"y": ["1e-20000"]`)
	assert.Equal(t, []byte(`{"amount":10}`), v.Payload)

	p, err := b.store.BySource(ctx, "ORDERS", 1, "paired")
	require.NoError(t, err)
	assert.NotContains(t, p.Flags, "raw_form")
	assert.NotContains(t, p.Flags, "not_storable:advisory", "a surrogate pair and an escaped backslash are JSON PostgreSQL takes")
	assert.Contains(t, string(p.Advisory), `"reason": "😀 \\ud800"`)
}
