package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestStreamMadeAgainIsNotFlaggedAfterKeyTrim (rev-fixes5a, noticed): the
// keeper's trims are recorded by stream name and sequence. A stream made
// again under the same name (deleted by hand, made again by the console's
// stream watch) starts its sequences at 1, so its new dead letters fell
// under the old stream's trimmed range and, in any batch that held a
// redelivery, were flagged after_retention_key_trim, which a replay leaves
// out. A dead letter the
// stream stored after the trim cannot be one held from before it.
func TestStreamMadeAgainIsNotFlaggedAfterKeyTrim(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	st, _ := heldPastKeyTrim(t, r, "AGAIN", "orders.refund")

	// The new stream's second dead letter is stored first; its redelivery
	// then comes in the same batch as the first, so the batch goes again
	// without what is stored (the path that looks for trims).
	now := time.Now().Add(time.Minute)
	second := dlqMessage("AGAIN", 2, "orders.refund", "again-2-new", now)
	_, err := st.Insert(ctx, []dlq.Record{second})
	require.NoError(t, err)
	fresh := dlqMessage("AGAIN", 1, "orders.refund", "again-1-new", now)
	res, err := st.Insert(ctx, []dlq.Record{second, fresh})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 1)
	d, err := st.BySource(ctx, "AGAIN", 1, "")
	require.NoError(t, err)
	assert.Equal(t, "again-1-new", d.MsgID)
	assert.NotContains(t, d.Flags, dlq.FlagAfterKeyTrim, "a dead letter stored by the stream after the trim is not one held from before it")
}
