package dlq

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIngestKeepsBlockClientReadsDifferently: the NATS client reads some
// header blocks without failing but not whole: it skips a line with an
// empty name and ignores bytes after the empty line that ends the block.
// Such a dead letter is stored with its block exactly as the stream
// stored it, and what the client dropped is flagged, not lost in silence.
// A block the client reads whole is not read again.
func TestIngestKeepsBlockClientReadsDifferently(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{}, nil)
	raw := b.ns.DialRaw(t)

	blocks := []string{
		"NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.refund\r\n: hidden from the client\r\nDlq-Error: boom\r\n\r\n",
		"NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.refund\r\n\r\nhidden after the end",
		"NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.refund\r\nDlq-Error: read whole\r\n\r\n",
	}
	for _, block := range blocks {
		_, err := raw.Publish("dlq.acme.orders.refund", []byte(block), []byte(`{}`))
		require.NoError(t, err)
	}
	b.waitRows(t, len(blocks))
	b.waitDrained(t)

	for seq, why := range []string{"line 3 has an empty name", "20 bytes follow the empty line"} {
		block := blocks[seq]
		d, err := b.store.BySource(ctx, "DLQ", uint64(seq+1), "")
		require.NoError(t, err)
		assert.Equal(t, []byte(block), d.HeaderBlock, "the block as the stream stored it")
		assert.Contains(t, d.Flags, "header_line_skipped")
		assert.Contains(t, strings.Join(d.MalformedReasons, "\n"), why)
		assert.Equal(t, "app.acme.orders.refund", d.OriginalSubject)
	}
	whole, err := b.store.BySource(ctx, "DLQ", 3, "")
	require.NoError(t, err)
	assert.Nil(t, whole.HeaderBlock, "a block the client read whole is not read again")
	assert.Empty(t, whole.Flags)
	assert.Equal(t, 2.0, testutil.ToFloat64(r.metrics.HeaderRereads))
}

// TestIngestHeaderlessNotReadAgain: dead letters published with no
// headers at all (nats pub dlq.acme.x foo) are stored without a request to
// the stream each: the delivery itself shows there was no header block.
func TestIngestHeaderlessNotReadAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r := b.start(t, IngestConfig{}, nil)
	const n = 50
	for range n {
		_, err := b.js.Publish(ctx, "dlq.acme.analytics.event", []byte("foo"))
		require.NoError(t, err)
	}
	b.waitRows(t, n)
	b.waitDrained(t)
	assert.Zero(t, testutil.ToFloat64(r.metrics.HeaderRereads), "no header block was read again")
	d, err := b.store.BySource(ctx, "DLQ", n, "")
	require.NoError(t, err)
	assert.Nil(t, d.HeaderBlock)
	assert.Equal(t, []string{"missing:original_subject"}, d.Flags)
	assert.Equal(t, n, countRows(t, b.db.Pool, "flags = '{missing:original_subject}'"))
}
