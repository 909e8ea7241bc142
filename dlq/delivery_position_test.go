package dlq

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestDeliveryPositionReadsAsTheDatabaseDoes: flagTrimmed finds a row's
// message by deliveryPosition, and the keys retention keeps (and the
// keeper trims) name it by the database's quarantine_delivery_position:
// the two read every delivery alike, a captured advisory's naming the
// advisory stream and the advisory's sequence.
func TestDeliveryPositionReadsAsTheDatabaseDoes(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	for _, delivery := range []string{
		"DLQ #7 stored 2026-12-02T10:00:00.123456789Z",
		"DLQ_ADVISORIES #1 stored 2026-10-23T12:00:00Z",
		"DLQ #999999999999999999 stored 2026-12-02T10:00:00Z",  // 18 digits
		"DLQ #1000000000000000000 stored 2026-12-02T10:00:00Z", // 19: no position
		"DLQ #0 stored 2026-12-02T10:00:00Z",                   // never made, read all the same
		"DLQ unreadable delivery 0011223344556677",             // metadata unreadable
		"ORDERS #5 consumer billing",                           // a record made by hand
		"ORDERS #5 consumer x stored 2026-12-02T10:00:00Z",     // ... whose consumer says "stored"
		"#5 stored 2026-12-02T10:00:00Z",                       // no stream
		"DLQ #5 stored",                                        // no time: the database wants the space after stored
		"DLQ #-5 stored 2026-12-02T10:00:00Z",
		"",
	} {
		stream, seq, ok := deliveryPosition(delivery)
		var dbStream *string
		var dbSeq *int64
		require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT stream, seq FROM quarantine_delivery_position($1)`, delivery).
			Scan(&dbStream, &dbSeq))
		if dbStream == nil {
			assert.False(t, ok, "%q: the database reads no position, deliveryPosition reads %s #%d", delivery, stream, seq)
			continue
		}
		if assert.True(t, ok, "%q: the database reads %s #%d", delivery, *dbStream, *dbSeq) {
			assert.Equal(t, *dbStream, stream, delivery)
			assert.Equal(t, uint64(*dbSeq), seq, delivery)
		}
	}
}
