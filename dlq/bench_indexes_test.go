package dlq

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
)

// indexCostRows is how many rows each measurement inserts, after as many
// already in the table (a partition part way through its day).
const indexCostRows = 100_000

// BenchmarkIngestIndexCost measures what each index of dead_letters costs
// the insert, in PostgreSQL alone (no NATS, no Go encoding): rows like the
// ingest benchmark's (1 KB payloads, distinct ids and errors) are inserted
// from a table in the same database in statements of 1,000 rows, each
// committed, as the ingester's batches are, into an unpartitioned copy of
// dead_letters that holds 100,000 rows already, with a set of indexes, and
// a CHECKPOINT before each timing. The indexes are those of the schema as
// migrated (pg_indexes of dead_letters), so the figures follow the schema.
// Run it with -benchtime=1x (make bench-indexes). Metrics, each in rows/s:
//
//   - none: no index at all; keys: the primary key and the unique source
//     key only (what storing without loss needs);
//   - all: every index; all-on-conflict: the same with ON CONFLICT DO
//     NOTHING, as a batch holding a redelivery is inserted;
//   - without-NAME: every index but NAME: all-rows/s against it is what
//     NAME costs.
//
// Every set is measured twice, and the better of the two is reported.
func BenchmarkIngestIndexCost(b *testing.B) {
	for b.Loop() {
		ctx := context.Background()
		db := testdb.New(b)
		owner, err := pgx.Connect(ctx, db.OwnerURL)
		require.NoError(b, err)
		defer owner.Close(ctx)
		admin, err := pgx.Connect(ctx, db.AdminURL)
		require.NoError(b, err)
		defer admin.Close(ctx)

		_, err = owner.Exec(ctx, strings.ReplaceAll(indexCostSetup, "{rows}", strconv.Itoa(2*indexCostRows)))
		require.NoError(b, err)
		indexes := indexDefinitions(b, owner)
		var keys, rest []string
		for _, ix := range indexes {
			if ix.unique {
				keys = append(keys, ix.def)
			} else {
				rest = append(rest, ix.def)
			}
		}
		all := append(slices.Clone(keys), rest...)

		measure := func(defs []string, onConflict bool) float64 {
			_, err := owner.Exec(ctx, `TRUNCATE index_cost_t; DO $$ DECLARE r record; BEGIN
                FOR r IN SELECT indexrelid::regclass AS i FROM pg_index WHERE indrelid = 'index_cost_t'::regclass LOOP
                    EXECUTE 'DROP INDEX ' || r.i; END LOOP; END $$`)
			require.NoError(b, err)
			for _, d := range defs {
				_, err := owner.Exec(ctx, d)
				require.NoError(b, err, d)
			}
			_, err = owner.Exec(ctx, `CALL index_cost_load(0, $1, false)`, indexCostRows)
			require.NoError(b, err)
			_, err = owner.Exec(ctx, `VACUUM ANALYZE index_cost_t`)
			require.NoError(b, err)
			_, err = admin.Exec(ctx, `CHECKPOINT`)
			require.NoError(b, err)
			start := time.Now()
			_, err = owner.Exec(ctx, `CALL index_cost_load($1, $1, $2)`, indexCostRows, onConflict)
			require.NoError(b, err)
			return indexCostRows / time.Since(start).Seconds()
		}

		// Each set is measured in two rounds and its best kept: what other
		// work on the machine took from one measurement is not its cost.
		best := map[string]float64{}
		keep := func(metric string, rate float64) { best[metric] = max(best[metric], rate) }
		for range 2 {
			keep("none-rows/s", measure(nil, false))
			keep("keys-rows/s", measure(keys, false))
			keep("all-rows/s", measure(all, false))
			keep("all-on-conflict-rows/s", measure(all, true))
			for _, ix := range indexes {
				if ix.unique {
					continue
				}
				without := slices.DeleteFunc(slices.Clone(all), func(d string) bool { return d == ix.def })
				keep("without-"+ix.short+"-rows/s", measure(without, false))
			}
		}
		for metric, rate := range best {
			b.ReportMetric(rate, metric)
		}
	}
}

// indexCostSetup makes index_cost_src, {rows} rows like the ingest benchmark's
// dead letters, index_cost_t, an unpartitioned copy of dead_letters with
// no index, and index_cost_load(first, n, on_conflict), which inserts rows
// first+1 .. first+n of the source into the copy 1,000 at a time, each
// statement committed.
const indexCostSetup = `
CREATE TABLE index_cost_src (LIKE dead_letters INCLUDING DEFAULTS);
ALTER TABLE index_cost_src ALTER COLUMN id SET DEFAULT 0;
INSERT INTO index_cost_src (id, tenant, item_type, subject, original_subject, msg_id, operation_id, correlation_id, principal,
    consumer, error, error_class, stack, attempts, dead_lettered_at, headers, payload, payload_sha256, payload_size, fingerprint,
    source_kind, source_stream, source_seq, source_consumer, source_key, delivery)
SELECT i, 'tenant' || (i % 4), 'item' || (i % 5), 'dlq.tenant' || (i % 4) || '.bench.item' || (i % 5), 'app.bench.item',
    'm-' || i, '', 'c-' || i, '', 'quarantine-ingest', 'order ' || i || ' failed: gateway 502', 'transient',
    E'main.handle()\n\t/app/h.go:12 +0x1d\nmain.main()\n\t/app/main.go:5', 3,
    now() + i * interval '1 microsecond',
    jsonb_build_object('Dlq-Original-Subject', jsonb_build_array('app.bench.item'), 'Dlq-Original-Msg-Id', jsonb_build_array('m-' || i),
        'Dlq-Error', jsonb_build_array('order ' || i || ' failed: gateway 502'), 'Dlq-Error-Class', jsonb_build_array('transient')),
    convert_to(repeat('abcdefghijklmnopqrstuvwxyz', 40) || 'abcdefghijklmnopqrstuvwx', 'UTF8'), sha256(int8send(i)), 1024,
    md5('fp' || (i % 7)), 'dlq', 'DLQ', i, 'quarantine-ingest', sha256(int8send(-i)), 'DLQ #' || i
FROM generate_series(1, {rows}) i;
CREATE INDEX ON index_cost_src (id);
CREATE TABLE index_cost_t (LIKE dead_letters INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS);
CREATE PROCEDURE index_cost_load(first int, n int, on_conflict bool) LANGUAGE plpgsql AS $p$
DECLARE
    cols text := 'tenant, item_type, subject, original_subject, msg_id, operation_id, correlation_id, principal, consumer, error,
        error_class, stack, attempts, dead_lettered_at, headers, payload, payload_sha256, payload_size, fingerprint, source_kind,
        source_stream, source_seq, source_consumer, source_key, delivery';
BEGIN
    FOR b IN 0 .. n / 1000 - 1 LOOP
        EXECUTE format('INSERT INTO index_cost_t (%s) SELECT %s FROM index_cost_src WHERE id > $1 AND id <= $2 %s', cols, cols,
            CASE WHEN on_conflict THEN 'ON CONFLICT (dead_lettered_at, source_key) DO NOTHING' ELSE '' END)
            USING first + b * 1000, first + (b + 1) * 1000;
        COMMIT;
    END LOOP;
END $p$`

// indexDef is an index of dead_letters made for index_cost_t: its
// statement, whether it is unique, and its name without the table's.
type indexDef struct {
	def, short string
	unique     bool
}

// indexDefinitions reads the indexes of dead_letters (the partitioned
// table's own, as migrated) and rewrites each for index_cost_t.
func indexDefinitions(b *testing.B, c *pgx.Conn) []indexDef {
	ctx := context.Background()
	rows, err := c.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'dead_letters'
        ORDER BY indexname`)
	require.NoError(b, err)
	type named struct{ Name, Def string }
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[named])
	require.NoError(b, err)
	on := regexp.MustCompile(`^(CREATE (UNIQUE )?INDEX) (\S+) ON (ONLY )?(\S+\.)?dead_letters `)
	var out []indexDef
	for _, ix := range list {
		m := on.FindStringSubmatch(ix.Def)
		require.NotNil(b, m, "an index definition of an unexpected shape: %s", ix.Def)
		def := fmt.Sprintf("%s %s ON index_cost_t %s", m[1], "index_cost_"+ix.Name, ix.Def[len(m[0]):])
		short := strings.TrimSuffix(strings.TrimPrefix(ix.Name, "dead_letters_"), "_idx")
		out = append(out, indexDef{def: def, short: short, unique: m[2] != ""})
	}
	require.NotEmpty(b, out)
	return out
}
