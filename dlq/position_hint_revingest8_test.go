package dlq

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest8AdvisoryPositionFormNamesTheAdvisoryNotTheMessage: a give-up
// captured from an advisory whose original PostgreSQL refuses in every form
// is stored, at the advisory's 5th delivery, in its position form: no
// payload, no headers, the original payload's SHA-256, and a reason that
// says "read them from the stream while it holds the message (nats stream
// get S N)". The live ingester fills S N from the advisory's delivery
// (DLQ_ADVISORIES and the advisory's sequence), so on-call who runs the
// command reads the advisory JSON, not the payload and headers the row
// lacks, and its hash never matches the one kept. The message is ORDERS #1,
// as the row's own source_stream/source_seq say.
func TestRevIngest8AdvisoryPositionFormNamesTheAdvisoryNotTheMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	refuseHostile(t, b)
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws, Workers: 1, MaxWait: 10 * time.Millisecond, RetryUnstorable: 100 * time.Millisecond}, nil)

	publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("hostile")})
	cons, err := b.js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "refunder", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	failingWorker(t, cons, 1, true)

	wait.Until(t, "the refused give-up stored in its position form", time.Minute, func() bool {
		return countRows(t, b.db.Pool, "'content_refused' = ANY(flags)") == 1
	})
	d := b.row(t, "'content_refused' = ANY(flags)")
	require.Equal(t, "ORDERS", d.SourceStream)
	require.Equal(t, int64(1), *d.SourceSeq)
	sum := sha256.Sum256([]byte("hostile"))
	require.Equal(t, sum[:], d.PayloadSHA256, "the kept hash is the original's payload's")
	reasons := strings.Join(d.MalformedReasons, "\n")
	assert.Contains(t, reasons, "nats stream get ORDERS 1",
		"the command must read the message whose payload and headers the row lacks (ORDERS #1); the reason says: %s", reasons)
	assert.NotContains(t, reasons, "nats stream get DLQ_ADVISORIES",
		"the advisory stream holds the advisory JSON, not the payload: %s", reasons)
}
