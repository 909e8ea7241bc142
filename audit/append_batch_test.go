package audit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

func TestAppendBatchKeepsTheChain(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	_, err := audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "first", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	var events []audit.Event
	for i := range 500 {
		events = append(events, audit.Event{Action: "replay.item", Outcome: audit.OutcomeOK, MessageID: fmt.Sprint("m-", i),
			After: map[string]any{"n": i, "z": "last", "a": []int{3, 2, 1}}, Reason: "bad \xff byte"})
	}
	var got []audit.Entry
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var err error
		got, err = audit.AppendBatch(ctx, tx, events)
		return err
	}))
	require.Len(t, got, 500)
	assert.Equal(t, int64(2), got[0].Seq)
	assert.Equal(t, int64(501), got[499].Seq)
	_, err = audit.AppendFunc(ctx, db.Pool, audit.Event{Action: "after", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	res, err := audit.Verify(ctx, db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	assert.True(t, res.OK(), res.String())
	assert.Equal(t, int64(502), res.Rows)

	// A rolled-back batch leaves nothing and the chain intact.
	_ = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := audit.AppendBatch(ctx, tx, events[:10])
		require.NoError(t, err)
		return fmt.Errorf("roll back")
	})
	res, err = audit.Verify(ctx, db.Pool, audit.VerifyOptions{})
	require.NoError(t, err)
	assert.True(t, res.OK())
	assert.Equal(t, int64(502), res.Rows)

	_, err = audit.AppendBatch(ctx, nil, []audit.Event{{Action: ""}})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
}
