package web_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/dlqdemo"
	"github.com/quarantine-console/quarantine/migrations"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
)

// BenchmarkTriageUI measures the server time of the triage screens (from the
// handler's entry to the last byte written, in process, with the session
// lookup and authorization every real request pays) on a database of
// BENCH_ROWS dead letters (default 1,000,000) filled by dlqdemo.Fill. The
// database (quarantine_bench_<rows>) is kept between runs and only filled
// when it holds fewer rows. Each scenario reports p50, p95 and p99 in
// milliseconds over BENCH_REQUESTS requests (default 300). With
// BENCH_EXPLAIN_OUT set, the EXPLAIN (ANALYZE, BUFFERS) plans of the list
// queries are written there. Run it with make bench-ui.
func BenchmarkTriageUI(b *testing.B) {
	rows := envInt(b, "BENCH_ROWS", 1_000_000)
	requests := envInt(b, "BENCH_REQUESTS", 300)
	ctx := context.Background()
	pool, dbURL := benchDatabase(b, rows)
	st := dlq.NewStore(pool)
	h, client, bb := benchServer(b, dbURL)
	cookie := bb.SessionCookie(b, client)

	tenants, err := st.Tenants(ctx)
	require.NoError(b, err)
	// Page 2,000 of everything: the cursor of the 100,000th newest row.
	var at time.Time
	var id int64
	require.NoError(b, pool.QueryRow(ctx, `SELECT dead_lettered_at, id FROM dead_letters
        ORDER BY dead_lettered_at DESC, id DESC OFFSET $1 LIMIT 1`, 1999*dlq.ListPageSize-1).Scan(&at, &id))
	deep := dlq.Cursor{At: at, ID: id}.Encode()
	// A tenant + item type + class filter of middling size: the tenth
	// biggest combination of the first tenant.
	var combo dlq.DepthCount
	require.NoError(b, pool.QueryRow(ctx, `SELECT item_type, error_class, sum(n)::bigint FROM dead_letter_counts
        WHERE tenant = $1 GROUP BY 1, 2 ORDER BY 3 DESC OFFSET 9 LIMIT 1`, tenants[0]).Scan(&combo.ItemType, &combo.ErrorClass, &combo.N))
	var ids []int64
	rs, err := pool.Query(ctx, `SELECT id FROM dead_letters TABLESAMPLE SYSTEM (1) LIMIT 200`)
	require.NoError(b, err)
	ids, err = pgx.CollectRows(rs, pgx.RowTo[int64])
	require.NoError(b, err)
	require.NotEmpty(b, ids)

	comboQ := url.Values{"tenant": {tenants[0]}, "type": {combo.ItemType}, "class": {string(combo.ErrorClass)}}.Encode()
	scenarios := []struct {
		name  string
		paths func(i int) string
		about string
	}{
		{"dashboard", func(int) string { return "/" }, "GET / (24 h chart)"},
		{"list-first-page", func(int) string { return "/deadletters" }, "GET /deadletters, all tenants"},
		{"list-page-2000", func(int) string { return "/deadletters?before=" + deep }, "page 2,000 (rows 99,951-100,000) by keyset cursor"},
		{"list-tenant-type-class", func(int) string { return "/deadletters?" + comboQ },
			fmt.Sprintf("tenant=%s type=%s class=%s (%d rows)", tenants[0], combo.ItemType, combo.ErrorClass, combo.N)},
		{"list-unresolved", func(int) string { return "/deadletters?status=unresolved" }, "status=unresolved, all tenants"},
		{"text-search", func(int) string { return "/deadletters?q=connection+refused" }, `q="connection refused" (page; count fetched apart)`},
		{"text-search-count", func(int) string { return "/deadletters/count?q=connection+refused" }, "the count fragment of that search (capped at 10,000)"},
		{"text-search-rare", func(int) string { return "/deadletters?q=ord-4242" }, `q="ord-4242" (rare: trigram index)`},
		{"group-list", func(int) string { return "/groups" }, "GET /groups (unresolved, by unresolved)"},
		{"detail", func(i int) string { return "/deadletters/" + strconv.FormatInt(ids[i%len(ids)], 10) }, "GET /deadletters/:id, 200 random ids"},
	}
	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			for b.Loop() {
				// Warm up: caches, prepared statements.
				for i := range 20 {
					serve(b, h, cookie, sc.paths(i))
				}
				times := make([]time.Duration, requests)
				for i := range requests {
					times[i] = serve(b, h, cookie, sc.paths(i))
				}
				slices.Sort(times)
				pct := func(p float64) float64 {
					return float64(times[min(len(times)-1, int(p*float64(len(times))))].Microseconds()) / 1000
				}
				b.ReportMetric(pct(0.50), "p50-ms")
				b.ReportMetric(pct(0.95), "p95-ms")
				b.ReportMetric(pct(0.99), "p99-ms")
				b.ReportMetric(0, "ns/op") // the op is a batch of requests; the percentiles are the result
			}
		})
		b.Logf("%s: %s", sc.name, sc.about)
	}

	if out := os.Getenv("BENCH_EXPLAIN_OUT"); out != "" {
		var sb strings.Builder
		fmt.Fprintf(&sb, "Rows: %d. Tenants: %s.\n", rows, strings.Join(tenants, ", "))
		before := deep
		for _, e := range []struct {
			name string
			f    dlq.ListFilter
		}{
			{"list first page (all tenants)", dlq.ListFilter{Tenants: tenants}},
			{"list page 2,000 (keyset)", dlq.ListFilter{Tenants: tenants, Before: before}},
			{fmt.Sprintf("tenant %s, type %s, class %s", tenants[0], combo.ItemType, combo.ErrorClass),
				dlq.ListFilter{Tenants: tenants, Tenant: tenants[0], ItemType: combo.ItemType, ErrorClass: combo.ErrorClass}},
			{"status unresolved", dlq.ListFilter{Tenants: tenants, Statuses: dlq.UnresolvedStatuses}},
			{`text "connection refused"`, dlq.ListFilter{Tenants: tenants, Text: "connection refused"}},
			{`text "ord-4242"`, dlq.ListFilter{Tenants: tenants, Text: "ord-4242"}},
		} {
			plan, err := st.ExplainList(ctx, e.f)
			require.NoError(b, err)
			fmt.Fprintf(&sb, "\n### %s\n\n```\n%s\n```\n", e.name, plan)
		}
		require.NoError(b, os.WriteFile(out, []byte(sb.String()), 0o644))
	}
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, name)
	return n
}

// serve runs one request through the whole handler and returns its time.
func serve(b testing.TB, h http.Handler, cookie *http.Cookie, path string) time.Duration {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.AddCookie(cookie)
	w := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(w, req)
	d := time.Since(start)
	if w.Code != http.StatusOK {
		b.Fatalf("GET %s: %d\n%s", path, w.Code, w.Body.String())
	}
	return d
}

// benchDatabase returns a pool on quarantine_bench_<rows>, created,
// migrated and filled as needed, as the server's role (its owner), and the
// URL the console connects with (the runtime role); the database is kept
// for the next run.
func benchDatabase(b testing.TB, rows int) (*pgxpool.Pool, string) {
	ctx := context.Background()
	server := testdb.ServerURL(b)
	name := "quarantine_bench_" + benchSize(rows)
	admin, err := pgx.Connect(ctx, server)
	require.NoError(b, err)
	var exists bool
	require.NoError(b, admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists))
	if !exists {
		_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
		require.NoError(b, err)
	}
	require.NoError(b, admin.Close(ctx))
	dbURL, err := testdb.WithDatabase(server, name)
	require.NoError(b, err)
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(b, err)
	_, err = migrations.Migrate(ctx, conn)
	require.NoError(b, err)
	require.NoError(b, conn.Close(ctx))
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(b, err)
	b.Cleanup(pool.Close)

	var have int
	require.NoError(b, pool.QueryRow(ctx, `SELECT coalesce(sum(n), 0)::int FROM dead_letter_counts`).Scan(&have))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if have < rows {
		start := time.Now()
		_, err := dlqdemo.Fill(ctx, pool, dlqdemo.FillConfig{Rows: rows - have, Log: log})
		require.NoError(b, err)
		b.Logf("filled %s with %d dead letters in %s", name, rows-have, time.Since(start).Round(time.Second))
	}
	// A database filled days ago has no recent arrivals; a day's worth more
	// keeps the dashboard's windows and the newest pages realistic.
	var newest time.Time
	require.NoError(b, pool.QueryRow(ctx, `SELECT max(dead_lettered_at) FROM dead_letters`).Scan(&newest))
	if time.Since(newest) > time.Hour {
		_, err := dlqdemo.Fill(ctx, pool, dlqdemo.FillConfig{Rows: max(1000, rows/1000), Span: 24 * time.Hour, Seed: uint64(time.Now().Unix()), Log: log})
		require.NoError(b, err)
	}
	testdb.EnsureRoles(b)
	return pool, testdb.RuntimeURL(b, name)
}

func benchSize(rows int) string {
	switch {
	case rows%1_000_000 == 0:
		return strconv.Itoa(rows/1_000_000) + "m"
	case rows%1000 == 0:
		return strconv.Itoa(rows/1000) + "k"
	}
	return strconv.Itoa(rows)
}

// benchServer is a console on a given database: its handler (to serve
// requests in process), a client signed in as an on-call of every tenant,
// and the console.
func benchServer(b testing.TB, dbURL string) (http.Handler, *http.Client, *testfactory.Console) {
	bb := testfactory.StartConsole(b, testfactory.ConsoleOptions{DatabaseURL: dbURL})
	client, _ := bb.SignIn(b, "*:oncall")
	return bb.Handler, client, bb
}
