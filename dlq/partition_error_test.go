package dlq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestNoPartitionReadsFieldsNotText has PostgreSQL refuse two rows of
// dead_letters with a check violation (23514): one for a day without a
// partition, one with a status its CHECK constraint refuses. Only the first
// is "no partition", and it stays so when the server words it in another
// language (lc_messages; the test cluster speaks English): a German server
// left every dead letter of a day without a partition unstored for good,
// because the day was recognised by its English message.
func TestNoPartitionReadsFieldsNotText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	const row = `INSERT INTO dead_letters (tenant, item_type, subject, msg_id, error_class, dead_lettered_at,
        payload_sha256, payload_size, fingerprint, source_kind, source_stream, source_key, status)
        VALUES ('acme', 'orders.refund', 'orders.refund', 'm-1', 'transient', $1,
        sha256(''), 0, 'f', 'dlq', 'DLQ', sha256('k'), $2)`
	refusal := func(at time.Time, status string) *pgconn.PgError {
		t.Helper()
		_, err := db.OwnerPool.Exec(ctx, row, at, status)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "23514", pgErr.Code, "a check violation: %v", err)
		return pgErr
	}
	german := func(e *pgconn.PgError, msg string) error {
		c := *e
		c.Message = msg
		return &c
	}

	noDay := refusal(time.Date(1990, 1, 2, 3, 0, 0, 0, time.UTC), "quarantined")
	assert.True(t, noPartition(noDay), "%+v", noDay)
	assert.True(t, noPartition(german(noDay, `keine Partition von Relation »dead_letters« für die Zeile gefunden`)),
		"the same error in German")
	assert.True(t, noPartition(errors.Join(errors.New("copy batch"), noDay)), "wrapped")

	badStatus := refusal(time.Now(), "no-such-status")
	assert.NotEmpty(t, badStatus.ConstraintName, "a CHECK constraint's violation names it")
	assert.False(t, noPartition(badStatus), "%+v", badStatus)
	assert.False(t, noPartition(german(badStatus, `neue Zeile für Relation »dead_letters« verletzt Check-Constraint`)))
}
