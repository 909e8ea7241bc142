package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestInsertSkipsStoredAndRepeatedRecords: a batch is inserted as it is
// first and with ON CONFLICT only once the source key refuses it. A batch
// holding records stored before, and one record twice, stores each new
// record once, reports only those, and counts them once; a record the
// database refuses in the same batch is still stored in its raw form.
func TestInsertSkipsStoredAndRepeatedRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	at := time.Now().Truncate(time.Millisecond)
	rec := func(seq uint64) Record {
		return ParseDLQ("dlq", Received{Subject: "dlq.acme.orders.refund", Stream: "DLQ", Seq: seq, Time: at.Add(time.Duration(seq) * time.Millisecond),
			Data: []byte("p")})
	}
	res, err := b.store.Insert(ctx, []Record{rec(1), rec(2)})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 2)
	assert.Equal(t, 1, res.Statements, "a batch of new records is one statement")

	bad := rec(5)
	bad.Error = "NUL \x00 refused by PostgreSQL"
	res, err = b.store.Insert(ctx, []Record{rec(2), rec(3), rec(3), rec(1), rec(4), bad})
	require.NoError(t, err)
	assert.Len(t, res.Inserted, 3, "records 3, 4 and the raw form of 5; 1 and 2 were stored before, 3 is there once")
	require.Len(t, res.Raw, 1)
	assert.Equal(t, 5, res.Raw[0].Index)
	assert.Empty(t, res.Unstorable)
	assert.Equal(t, 5, countRows(t, b.db.Pool, "true"), "one row per source position")

	assert.Equal(t, int64(5), foldedCount(t, b.db.Pool), "the counters count each stored row once")
}

// TestRefusedConnectionIsUnreachable: a connection the server refuses with
// a code of its own (here 3D000, no such database; 55000 when the database
// does not accept connections, 28P01 a password) is the database out of
// reach, not a record it refused: an insert that meets it is retried, never
// isolated record by record and counted unstorable.
func TestRefusedConnectionIsUnreachable(t *testing.T) {
	t.Parallel()
	u, err := testdb.WithDatabase(testdb.ServerURL(t), "quarantine_no_such_database")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err == nil {
		_ = conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "the server refused with a code")
	assert.Equal(t, "3D000", pgErr.Code)
	assert.True(t, Unreachable(err), "%v", err)
}
