package dlq

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failSlowAndRefused has PostgreSQL fail the statement of a dead letter
// whose payload is "slow" as a statement timeout does (57014: Busy, not
// its data), always, and refuse one whose payload is "refused" in its
// parsed form only (its raw form is taken).
func failSlowAndRefused(t *testing.T, b *bundle) {
	t.Helper()
	_, err := b.db.OwnerPool.Exec(context.Background(), `
        CREATE FUNCTION test_fails_slow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = 'slow'::bytea THEN RAISE EXCEPTION 'test: canceling statement due to statement timeout' USING ERRCODE = '57014'; END IF;
            IF NEW.payload = 'refused'::bytea AND NOT ('raw_form' = ANY(NEW.flags)) THEN RAISE EXCEPTION 'test refuses it parsed' USING ERRCODE = '22023'; END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_fails_slow BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_fails_slow();`)
	require.NoError(t, err)
}

// TestRev34SweepStoresTheOthersOfABusyDeadLetter: dead letters acked
// without a row, one of them ("slow") failing its statement every time
// for a reason not its data (a statement timeout: TOAST damage, a lock, a
// huge row). The sweep stored a batch in one insert and ended its step at
// any Busy error, before the batch: every sweep rebuilt the same batch
// and failed the same way, and nothing after the slow one was ever stored
// (lost once the stream's age limit dropped them). Now, as a writer does,
// it narrows the batch down: the others are stored, in one sweep, the
// slow one is held (never stored in position form for PostgreSQL's
// failure), and the sweep after PostgreSQL takes it stores it whole. A
// half of the bisection that stored some of its records before it failed
// (a record refused parsed, stored raw, then the slow one) has them
// counted as stored by this sweep, not as found stored.
func TestRev34SweepStoresTheOthersOfABusyDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{})
	// Halves of the bisection: [slow ok ok ok] [refused ok ok slow].
	payloads := map[int]string{1: "slow", 5: "refused", 8: "slow"}
	publishAcked(t, b, 8, payloads)
	failSlowAndRefused(t, b)

	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err, "one busy dead letter does not end the sweep")
	assert.Equal(t, 6, countRows(t, b.db.Pool, "true"), "every dead letter but the two slow ones stored")
	assert.Equal(t, 1, countRows(t, b.db.Pool, "'raw_form' = ANY(flags)"), "the refused one in its raw form")
	assert.Equal(t, uint64(6), res.Stored, "each row this sweep stored counted stored: %+v", res)
	assert.Zero(t, res.AlreadyStored, "none found stored: %+v", res)
	assert.Equal(t, []int64{1, 8}, b.heldOf(t, "DLQ"), "the slow ones held")
	assert.Zero(t, countRows(t, b.db.Pool, "'content_refused' = ANY(flags)"), "never a position form for PostgreSQL's failure")

	for range sweepHeldTries {
		_, err = in.sweep(ctx, "DLQ")
		require.NoError(t, err)
	}
	assert.Equal(t, []int64{1, 8}, b.heldOf(t, "DLQ"), "held, however many sweeps, while PostgreSQL fails them")
	assert.Zero(t, countRows(t, b.db.Pool, "'content_refused' = ANY(flags)"))

	_, err = b.db.OwnerPool.Exec(ctx, `DROP TRIGGER test_fails_slow ON dead_letters`)
	require.NoError(t, err)
	_, err = in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, 2, countRows(t, b.db.Pool, "payload = 'slow'"), "stored whole once PostgreSQL takes them")
	assert.Empty(t, b.heldOf(t, "DLQ"))
	assert.Equal(t, int64(8), b.sweptTo(t, "DLQ"), "the watermark at the ack floor")
}
