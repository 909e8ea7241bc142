package dlqdemo

import (
	"context"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// TestFill fills a database twice and checks that every summary the
// triggers keep equals what the table holds, that fingerprints are what
// ingest would compute, and that the mix has what the console must cope with.
func TestFill(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	now := time.Now()
	st, err := Fill(ctx, db.OwnerPool, FillConfig{Rows: 15_000, Now: now, ChunkRows: 4_000})
	require.NoError(t, err)
	assert.Equal(t, 15_000, st.Rows)
	_, err = Fill(ctx, db.OwnerPool, FillConfig{Rows: 5_000, Now: now, Seed: 7, Tenants: []string{"acme", "umbrella"}})
	require.NoError(t, err, "a second fill appends")

	count := func(sql string) int {
		t.Helper()
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, sql).Scan(&n))
		return n
	}
	assert.Equal(t, 20_000, count(`SELECT count(*) FROM dead_letters`))

	t.Run("SummariesMatchTheTable", func(t *testing.T) {
		for name, sql := range map[string]string{
			"counts": `(SELECT tenant, item_type, error_class, status, count(*) FROM dead_letters GROUP BY 1, 2, 3, 4
                EXCEPT SELECT tenant, item_type, error_class, status, n FROM dead_letter_counts WHERE n > 0)
                UNION ALL (SELECT tenant, item_type, error_class, status, n FROM dead_letter_counts WHERE n > 0
                EXCEPT SELECT tenant, item_type, error_class, status, count(*) FROM dead_letters GROUP BY 1, 2, 3, 4)`,
			"hourly arrivals": `(SELECT tenant, date_bin('1 hour', dead_lettered_at, TIMESTAMPTZ '2000-01-01Z'), item_type, error_class, count(*)
                FROM dead_letters GROUP BY 1, 2, 3, 4
                EXCEPT SELECT tenant, hour, item_type, error_class, n FROM dead_letter_arrivals)
                UNION ALL (SELECT tenant, hour, item_type, error_class, n FROM dead_letter_arrivals
                EXCEPT SELECT tenant, date_bin('1 hour', dead_lettered_at, TIMESTAMPTZ '2000-01-01Z'), item_type, error_class, count(*)
                FROM dead_letters GROUP BY 1, 2, 3, 4)`,
			"tenant hour arrivals": `(SELECT tenant, date_bin('1 hour', dead_lettered_at, TIMESTAMPTZ '2000-01-01Z'), count(*) FROM dead_letters GROUP BY 1, 2
                EXCEPT SELECT tenant, hour, n FROM dead_letter_arrivals_tenant_hour)
                UNION ALL (SELECT tenant, hour, n FROM dead_letter_arrivals_tenant_hour
                EXCEPT SELECT tenant, date_bin('1 hour', dead_lettered_at, TIMESTAMPTZ '2000-01-01Z'), count(*) FROM dead_letters GROUP BY 1, 2)`,
			"minute arrivals": `(SELECT tenant, date_bin('1 minute', dead_lettered_at, TIMESTAMPTZ '2000-01-01Z'), count(*) FROM dead_letters GROUP BY 1, 2
                EXCEPT SELECT tenant, minute, n FROM dead_letter_arrivals_minute)
                UNION ALL (SELECT tenant, minute, n FROM dead_letter_arrivals_minute
                EXCEPT SELECT tenant, date_bin('1 minute', dead_lettered_at, TIMESTAMPTZ '2000-01-01Z'), count(*) FROM dead_letters GROUP BY 1, 2)`,
			"groups": `(SELECT tenant, fingerprint, item_type, min(error_class), count(*), count(*) FILTER (WHERE dead_letter_unresolved(status)),
                    min(dead_lettered_at), max(dead_lettered_at), max(id) FROM dead_letters GROUP BY 1, 2, 3
                EXCEPT SELECT tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id FROM dead_letter_groups)
                UNION ALL (SELECT tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id FROM dead_letter_groups
                EXCEPT SELECT tenant, fingerprint, item_type, min(error_class), count(*), count(*) FILTER (WHERE dead_letter_unresolved(status)),
                    min(dead_lettered_at), max(dead_lettered_at), max(id) FROM dead_letters GROUP BY 1, 2, 3)`,
		} {
			assert.Zero(t, count(`SELECT count(*) FROM (`+sql+`) diff`), name)
		}
	})

	t.Run("FingerprintsAsIngestComputesThem", func(t *testing.T) {
		rows, err := db.Pool.Query(ctx, `SELECT error_class, error, stack, fingerprint FROM dead_letters`)
		require.NoError(t, err)
		bad := 0
		var class, text, stack, fp string
		_, err = pgx.ForEachRow(rows, []any{&class, &text, &stack, &fp}, func() error {
			if dlq.Fingerprint(dlq.ErrorClass(class), text, stack) != fp {
				bad++
			}
			return nil
		})
		require.NoError(t, err)
		assert.Zero(t, bad)
	})

	t.Run("Mix", func(t *testing.T) {
		groups := count(`SELECT count(DISTINCT fingerprint) FROM dead_letters`)
		assert.Greater(t, groups, 150)
		assert.Less(t, groups, 300)
		assert.Greater(t, count(`SELECT max(n) FROM (SELECT count(*) AS n FROM dead_letters GROUP BY fingerprint) g`), 20*count(`SELECT min(n) FROM (SELECT count(*) AS n FROM dead_letters GROUP BY fingerprint) g`),
			"skewed: big groups and a long tail")
		assert.Equal(t, 4, count(`SELECT count(DISTINCT tenant) FROM dead_letters`))
		assert.GreaterOrEqual(t, count(`SELECT count(DISTINCT item_type) FROM dead_letters`), 8)
		assert.Equal(t, 9, count(`SELECT count(DISTINCT error_class) FROM dead_letters`))
		assert.GreaterOrEqual(t, count(`SELECT count(DISTINCT status) FROM dead_letters`), 6)
		assert.Positive(t, count(`SELECT count(*) FROM dead_letters WHERE payload_size > 65536`), "large payloads")
		assert.Positive(t, count(`SELECT count(*) FROM dead_letters WHERE payload_size = 0`), "empty payloads")
		assert.Positive(t, count(`SELECT count(*) FROM dead_letters WHERE malformed`))
		assert.Positive(t, count(`SELECT count(*) FROM dead_letters WHERE msg_id_derived`))
		assert.Positive(t, count(`SELECT count(*) FROM dead_letters WHERE source_kind = 'advisory'`))
		assert.Positive(t, count(`SELECT count(*) FROM dead_letters WHERE error LIKE '%<script>%'`))
		assert.Positive(t, count(`SELECT count(*) FROM dead_letters WHERE correlation_id LIKE '%onerror%'`))
		assert.Positive(t, count(`SELECT count(*) FROM dead_letters WHERE original_subject LIKE 'javascript:%'`))
		assert.Positive(t, count(`SELECT count(*) FROM dead_letters WHERE error LIKE '%'||U&'\FFFD'||'%'`), "invalid UTF-8 made safe")
		assert.Positive(t, count(`SELECT count(*) FROM dead_letters WHERE headers @> '[{"encoding":"base64"}]'`))
		assert.Positive(t, count(`SELECT count(*) FROM dead_letters WHERE dead_lettered_at > now() - interval '1 hour'`), "something is happening now")
		assert.Zero(t, count(`SELECT count(*) FROM dead_letters WHERE dead_lettered_at > now() + interval '1 minute'`))

		rows, err := db.Pool.Query(ctx, `SELECT payload FROM dead_letters WHERE payload_size BETWEEN 1 AND 4000 LIMIT 2000`)
		require.NoError(t, err)
		payloads, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		require.NoError(t, err)
		binary := 0
		for _, p := range payloads {
			if !utf8.Valid(p) {
				binary++
			}
		}
		assert.Positive(t, binary, "binary payloads")
	})

	t.Run("Invalid", func(t *testing.T) {
		_, err := Fill(ctx, db.OwnerPool, FillConfig{Rows: 0})
		assert.Error(t, err)
		_, err = Fill(ctx, db.OwnerPool, FillConfig{Rows: MaxFillRows + 1})
		assert.Error(t, err)
	})
}
