package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestFixMarkerAuthor: a fix marker records whether its author's email was
// verified and names them as every page names a person; a marker from
// before migration 0049 keeps its email (else its subject) as it was.
func TestFixMarkerAuthor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	st := NewStore(db.Pool)
	at := time.Now().Add(-time.Hour)
	_, err := st.Insert(ctx, []Record{ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: 1, Time: at, Data: []byte("order")})})
	require.NoError(t, err)
	var id int64
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT id FROM dead_letters`).Scan(&id))
	record := func(by quarantine.Actor) Fix {
		t.Helper()
		f, err := st.RecordFix(ctx, id, FixInput{Scope: FixItemType, FixedAt: time.Now(), Ref: "v1.2.3"}, by, quarantine.RequestMeta{}, time.Now())
		require.NoError(t, err)
		return f
	}

	t.Run("Verified", func(t *testing.T) {
		f := record(quarantine.Actor{Issuer: "i", Subject: "oncall", Email: "Oncall@example.com", EmailVerified: true, Name: "On Call"})
		assert.Equal(t, "Oncall@example.com", f.Author(), "the address, not the name its owner set")
		assert.Equal(t, "i", f.ByIssuer)
		assert.Equal(t, "oncall", f.BySubject)
	})
	t.Run("Unverified", func(t *testing.T) {
		f := record(quarantine.Actor{Issuer: "i", Subject: "claimant", Email: "dana@example.com"})
		assert.Equal(t, "dana@example.com (unverified)", f.Author())
	})
	t.Run("NoEmail", func(t *testing.T) {
		f := record(quarantine.Actor{Issuer: "i", Subject: "no-email", EmailVerified: true})
		assert.Equal(t, "no-email", f.Author(), "the subject; a verified flag without an address verifies nothing")
		require.NotNil(t, f.ByEmailVerified)
		assert.False(t, *f.ByEmailVerified)
	})
	t.Run("BeforeMigration0049", func(t *testing.T) {
		_, err := db.Pool.Exec(ctx, `INSERT INTO fix_markers (tenant, item_type, fixed_at, fix_ref, created_by_issuer, created_by_subject, created_by_email)
            VALUES ('acme', 'orders', now(), 'old-with-email', 'i', 'old-oncall', 'old@example.com'),
                   ('acme', 'orders', now(), 'old-without-email', 'i', 'old-subject', '')`)
		require.NoError(t, err)
		var fixes []Fix
		b := &pgx.Batch{}
		QueueFixesFor(b, id, at.Add(-24*time.Hour), at.Add(24*time.Hour), 100, &fixes)
		require.NoError(t, db.Pool.SendBatch(ctx, b).Close())
		authors := map[string]string{}
		for _, f := range fixes {
			authors[f.Ref] = f.Author()
		}
		assert.Equal(t, "old@example.com", authors["old-with-email"], "as it was shown")
		assert.Equal(t, "old-subject", authors["old-without-email"], "as it was shown")
	})
	t.Run("VerifiedWithoutEmailRefused", func(t *testing.T) {
		_, err := db.Pool.Exec(ctx, `INSERT INTO fix_markers (tenant, item_type, fixed_at, fix_ref, created_by_issuer, created_by_subject, created_by_email,
            created_by_email_verified) VALUES ('acme', 'orders', now(), 'v', 'i', 's', '', true)`)
		assert.ErrorContains(t, err, "fix_markers_author_check")
	})
}
