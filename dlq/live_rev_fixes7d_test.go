package dlq

import (
	"bytes"
	"context"
	"github.com/quarantine-console/quarantine/testfactory/wait"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevFixes7dCorruptToastNotContentRefusal
//
// Defect (medium): an error of PostgreSQL's own storage (class XX:
// XX000 internal_error "could not read block ... of relation pg_toast_...",
// XX001 data_corrupted "invalid page in block", XX002 index_corrupted
// "index pg_toast_..._index contains unexpected zero page") is neither
// Busy nor Unreachable, so Insert takes it as the record's content. It
// only meets the rows that write to the day's TOAST relation: a dead
// letter whose payload (or header block) is larger than about 2 KB. Its
// parsed and raw forms are refused, and once the message's delivery
// count reaches 5, storeRefusedWholeOrPosition tries it whole once more
// (refused again: the corruption is still there) and then stores its
// position form, which has no payload and no header block, touches no
// TOAST, and is taken: the dead letter is acked payload-less, flagged
// content_refused, its payload and headers gone from the console for
// good (the stream deletes the message at its age limit), though nothing
// of the message's content was refused, only a damaged page of
// PostgreSQL's. Every large dead letter of that day ends so until someone
// REINDEXes; the small ones are stored whole, so nothing looks stopped.
//
// Simulated here with a trigger raising XX001 for a row with a payload of
// more than 2 KB, what a corrupt TOAST index or page gives such a row.
//
// Expected: an internal or data-corruption error (class XX) is PostgreSQL's,
// not the content's: the dead letter is deferred (Busy) and never stored in
// its position form; once the relation is repaired it is stored whole.
func TestRevFixes7dCorruptToastNotContentRefusal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.corruptToast(t, "")
	b.start(t, IngestConfig{Workers: 1, MaxWait: 10 * time.Millisecond, RetryUnstorable: 100 * time.Millisecond}, nil)

	payload := bytes.Repeat([]byte("x"), 3000)
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: payload})
	// A small dead letter after it: stored whole, as it should be; the
	// ingester goes on.
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("small")})
	b.waitRows(t, 1)
	small := b.row(t, "source_seq = 2")
	assert.Equal(t, []byte("small"), small.Payload)

	// Wait for the large one's fifth delivery to be handled: its sixth
	// (and the small one's first) means the ingester settled the fifth.
	// By then either its position form is stored (the defect) or it is
	// still unstored and unacked (expected). The deliveries come every
	// RetryUnstorable.
	wait.Until(t, "the large dead letter delivered a sixth time", 30*time.Second, func() bool {
		return b.consumerInfo(t).Delivered.Consumer >= 1+6
	})
	var n int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE source_seq = 1`).Scan(&n))
	if n == 0 {
		return // deferred, never stored without its content: expected
	}
	d := b.row(t, "source_seq = 1")
	assert.NotContains(t, d.Flags, "content_refused",
		"a corrupt TOAST page is PostgreSQL's, not the message's content: %v", d.MalformedReasons)
	assert.True(t, bytes.Equal(payload, d.Payload), "the payload kept for replay: stored %d of its %d bytes", len(d.Payload), len(payload))
}
