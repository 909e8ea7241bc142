package web_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"

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
//
// Every scenario is measured twice: on the table as filled ("fresh/..."),
// then after a sustained ingest of BENCH_INGEST more dead letters (default
// 1,000,000; 0: none) published through NATS and stored by the console's
// ingester as in production, counters folded and all ("ingested/...").
// The next run first removes what the last one ingested.
func BenchmarkTriageUI(b *testing.B) {
	rows := envInt(b, "BENCH_ROWS", 1_000_000)
	requests := envInt(b, "BENCH_REQUESTS", 300)
	sustained := envInt(b, "BENCH_INGEST", 1_000_000)
	pool, dbURL := benchDatabase(b, rows)
	st := dlq.NewStore(pool)
	h, client, bb := benchServer(b, dbURL, true)
	cookie := bb.SessionCookie(b, client)
	// A tenant + item type + class filter of middling size, the same in
	// both phases: the tenth biggest combination of the first tenant.
	tenants, err := st.Tenants(context.Background())
	require.NoError(b, err)
	var combo dlq.DepthCount
	require.NoError(b, pool.QueryRow(context.Background(), `SELECT item_type, error_class, sum(n)::bigint FROM dead_letter_counts
        WHERE tenant = $1 GROUP BY 1, 2 ORDER BY 3 DESC OFFSET 9 LIMIT 1`, tenants[0]).Scan(&combo.ItemType, &combo.ErrorClass, &combo.N))
	combo.Tenant = tenants[0]
	measure(b, "fresh", pool, st, h, cookie, combo, rows, requests)
	if sustained > 0 {
		ingest(b, bb, pool, sustained)
		measure(b, "ingested", pool, st, h, cookie, combo, rows+sustained, requests)
	}
}

// measure times every scenario on the database as it is, under
// sub-benchmarks named phase/scenario.
func measure(b *testing.B, phase string, pool *pgxpool.Pool, st *dlq.Store, h http.Handler, cookie *http.Cookie, combo dlq.DepthCount, rows, requests int) {
	ctx := context.Background()

	tenants, err := st.Tenants(ctx)
	require.NoError(b, err)
	// Page 2,000 of everything: the cursor of the 100,000th newest row.
	var at time.Time
	var id int64
	require.NoError(b, pool.QueryRow(ctx, `SELECT dead_lettered_at, id FROM dead_letters
        ORDER BY dead_lettered_at DESC, id DESC OFFSET $1 LIMIT 1`, min(1999*dlq.ListPageSize-1, rows/2)).Scan(&at, &id))
	deep := dlq.Cursor{At: at, ID: id}.Encode()
	require.NoError(b, pool.QueryRow(ctx, `SELECT coalesce(sum(n), 0)::bigint FROM dead_letter_counts
        WHERE tenant = $1 AND item_type = $2 AND error_class = $3`, combo.Tenant, combo.ItemType, combo.ErrorClass).Scan(&combo.N))
	var ids []int64
	rs, err := pool.Query(ctx, `SELECT id FROM dead_letters TABLESAMPLE SYSTEM (1) LIMIT 200`)
	require.NoError(b, err)
	ids, err = pgx.CollectRows(rs, pgx.RowTo[int64])
	require.NoError(b, err)
	require.NotEmpty(b, ids)
	rs, err = pool.Query(ctx, `SELECT msg_id FROM dead_letters WHERE id = ANY($1) AND msg_id <> ''`, ids)
	require.NoError(b, err)
	msgIDs, err := pgx.CollectRows(rs, pgx.RowTo[string])
	require.NoError(b, err)
	require.NotEmpty(b, msgIDs)

	var loudest string // the group with the most unresolved: its replay offer judges the most candidates
	require.NoError(b, pool.QueryRow(ctx, `SELECT fingerprint FROM dead_letter_groups GROUP BY fingerprint
		ORDER BY sum(unresolved) DESC LIMIT 1`).Scan(&loudest))

	comboQ := url.Values{"tenant": {combo.Tenant}, "type": {combo.ItemType}, "class": {string(combo.ErrorClass)}}.Encode()
	scenarios := []struct {
		name  string
		paths func(i int) string
		about string
	}{
		{"dashboard", func(int) string { return "/" }, "GET / (24 h chart)"},
		{"list-first-page", func(int) string { return "/deadletters" }, "GET /deadletters, all tenants"},
		{"list-page-2000", func(int) string { return "/deadletters?before=" + deep }, "page 2,000 (rows 99,951-100,000) by keyset cursor"},
		{"list-tenant-type-class", func(int) string { return "/deadletters?" + comboQ },
			fmt.Sprintf("tenant=%s type=%s class=%s (%d rows)", combo.Tenant, combo.ItemType, combo.ErrorClass, combo.N)},
		{"list-unresolved", func(int) string { return "/deadletters?status=unresolved" }, "status=unresolved, all tenants"},
		{"text-search", func(int) string { return "/deadletters?q=connection+refused" }, `q="connection refused" (page; count fetched apart)`},
		{"text-search-count", func(int) string { return "/deadletters/count?q=connection+refused" }, "the count fragment of that search (capped at 10,000)"},
		{"text-search-rare", func(int) string { return "/deadletters?q=ord-4242" }, `q="ord-4242" (rare: trigram index)`},
		{"group-list", func(int) string { return "/groups" }, "GET /groups (unresolved, by unresolved)"},
		{"group-offer", func(int) string { return "/groups/offer?state=unresolved&group=" + loudest },
			"GET /groups/offer: the replay offer of the group with the most unresolved (its menu opened; up to 201 candidates a tenant judged)"},
		{"list-msg-id", func(i int) string { return "/deadletters?msg_id=" + url.QueryEscape(msgIDs[i%len(msgIDs)]) },
			"msg_id=<one of 200 random dead letters' message ids> (hash index, every partition)"},
		{"detail", func(i int) string { return "/deadletters/" + strconv.FormatInt(ids[i%len(ids)], 10) }, "GET /deadletters/:id, 200 random ids"},
	}
	for _, sc := range scenarios {
		b.Run(phase+"/"+sc.name, func(b *testing.B) {
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
		b.Logf("%s/%s: %s", phase, sc.name, sc.about)
	}

	if out := os.Getenv("BENCH_EXPLAIN_OUT"); out != "" {
		var sb strings.Builder
		fmt.Fprintf(&sb, "\n#### %s: %d rows, tenants %s, %d partitions\n", phase, rows, strings.Join(tenants, ", "), partitionCount(b, pool))
		before := deep
		for _, e := range []struct {
			name string
			f    dlq.ListFilter
		}{
			{"list first page (all tenants)", dlq.ListFilter{Tenants: tenants}},
			{"list page 2,000 (keyset)", dlq.ListFilter{Tenants: tenants, Before: before}},
			{fmt.Sprintf("tenant %s, type %s, class %s", combo.Tenant, combo.ItemType, combo.ErrorClass),
				dlq.ListFilter{Tenants: tenants, Tenant: combo.Tenant, ItemType: combo.ItemType, ErrorClass: combo.ErrorClass}},
			{"status unresolved", dlq.ListFilter{Tenants: tenants, Statuses: dlq.UnresolvedStatuses}},
			{`text "connection refused"`, dlq.ListFilter{Tenants: tenants, Text: "connection refused"}},
			{`text "ord-4242"`, dlq.ListFilter{Tenants: tenants, Text: "ord-4242"}},
			{"message id " + msgIDs[0], dlq.ListFilter{Tenants: tenants, MsgID: msgIDs[0]}},
		} {
			plan, err := st.ExplainList(ctx, e.f)
			require.NoError(b, err)
			fmt.Fprintf(&sb, "\n%s, %s:\n\n```\n%s\n```\n", phase, e.name, compactPlan(plan))
		}
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		require.NoError(b, err)
		_, err = f.WriteString(sb.String())
		require.NoError(b, err)
		require.NoError(b, f.Close())
	}
}

// compactPlan folds the runs of partition scans a plan never executed (the
// older days an ordered append did not need) into one line each.
func compactPlan(plan string) string {
	var out []string
	skipBelow := -1 // indent of the never-executed node being skipped
	run, runIndent := 0, 0
	flush := func() {
		if run > 0 {
			out = append(out, strings.Repeat(" ", runIndent)+fmt.Sprintf("->  (%d more partition scans, never executed)", run))
			run = 0
		}
	}
	for _, line := range strings.Split(plan, "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if skipBelow >= 0 && indent > skipBelow {
			continue // a detail line of a skipped node
		}
		skipBelow = -1
		if strings.HasPrefix(strings.TrimLeft(line, " "), "->") && strings.Contains(line, "(never executed)") {
			if run > 0 && indent != runIndent {
				flush()
			}
			run, runIndent, skipBelow = run+1, indent, indent
			continue
		}
		flush()
		out = append(out, line)
	}
	flush()
	return strings.Join(out, "\n")
}

func partitionCount(b *testing.B, pool *pgxpool.Pool) int {
	var n int
	require.NoError(b, pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_inherits WHERE inhparent = 'dead_letters'::regclass`).Scan(&n))
	return n
}

// ingest publishes n dead letters of the fill's tenants and item types
// (1 KB payloads, full contract headers, a few hundred error groups) into
// the console's DLQ stream as fast as the client can, and waits until the
// console has stored and acked them all and folded them into the counters.
// It logs the rate and the size of the counter tables after it.
func ingest(b *testing.B, bb *testfactory.Console, pool *pgxpool.Pool, n int) {
	ctx := context.Background()
	js := bb.JetStream
	payload := []byte(strings.Repeat(`{"order_id":"ord-1","amount_cents":1200}`, 26))
	types := []string{"orders.refund", "email.send", "search.index_update", "analytics.event", "accounts.permission_grant",
		"orders.cancel", "billing.invoice_create", "inventory.reserve", "webhooks.deliver", "email.digest"}
	classes := []string{"transient", "permanent", "schema_invalid", "unknown_effect", "stale_version", "policy"}
	stream, err := js.Stream(ctx, "DLQ")
	require.NoError(b, err)
	first := stream.CachedInfo().State.LastSeq
	start := time.Now()
	for i := range n {
		tenant := []string{"acme", "globex", "initech"}[i%3]
		typ := types[(i/3)%len(types)]
		msg := &nats.Msg{Subject: "dlq." + tenant + "." + typ, Data: payload, Header: nats.Header{
			dlq.HeaderOriginalSubject: {"app." + tenant + "." + typ}, dlq.HeaderOriginalMsgID: {fmt.Sprintf("sustained-%d-%d", start.Unix(), i)},
			dlq.HeaderError: {fmt.Sprintf("%s: upstream %d refused order %d", typ, i%97, i)}, dlq.HeaderErrorClass: {classes[i%len(classes)]},
			dlq.HeaderAttempts: {"3"}, dlq.HeaderCorrelationID: {fmt.Sprintf("c-%d", i)},
		}}
		if _, err := js.PublishMsgAsync(msg); err != nil {
			b.Fatal(err)
		}
		if i%2000 == 1999 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	published := time.Since(start)
	cons, err := js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(b, err)
	for {
		info, err := cons.Info(ctx)
		require.NoError(b, err)
		if info.AckFloor.Stream >= first+uint64(n) && info.NumAckPending == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	stored := time.Since(start)
	_, err = dlq.FoldCounters(ctx, pool)
	require.NoError(b, err)
	b.Logf("sustained ingest: %d dead letters through NATS, published in %s, stored in %s (%.0f/s)",
		n, published.Round(time.Second), stored.Round(time.Second), float64(n)/stored.Seconds())
	var sizes []string
	for _, table := range []string{"dead_letter_counts", "dead_letter_groups", "dead_letter_arrivals", "dead_letter_arrivals_minute", "dead_letter_arrivals_tenant_hour", "dead_letter_deltas", "sessions"} {
		var pages, live int64
		require.NoError(b, pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass) / 8192, (SELECT count(*) FROM `+table+`)`, table).Scan(&pages, &live))
		sizes = append(sizes, fmt.Sprintf("%s %d rows in %d pages", table, live, pages))
	}
	b.Logf("sustained ingest: after it, %s", strings.Join(sizes, "; "))
}

// unsustain removes what earlier runs' sustained ingest stored (every dead
// letter the fill did not write) and counts everything again, so the
// fresh scenarios measure the table as filled.
func unsustain(b testing.TB, pool *pgxpool.Pool) {
	ctx := context.Background()
	tag, err := pool.Exec(ctx, `DELETE FROM dead_letters WHERE source_stream <> $1`, dlqdemo.FillStream)
	require.NoError(b, err)
	if tag.RowsAffected() == 0 {
		return
	}
	for _, stmt := range []string{
		// dead_letter_arrivals' trigger fills dead_letter_arrivals_tenant_hour again.
		`TRUNCATE dead_letter_counts, dead_letter_arrivals, dead_letter_arrivals_minute, dead_letter_arrivals_tenant_hour, dead_letter_groups, dead_letter_deltas`,
		`INSERT INTO dead_letter_counts (tenant, item_type, error_class, status, n)
         SELECT tenant, item_type, error_class, status, count(*) FROM dead_letters GROUP BY 1, 2, 3, 4`,
		`INSERT INTO dead_letter_arrivals (tenant, hour, item_type, error_class, n)
         SELECT tenant, date_bin('1 hour', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), item_type, error_class, count(*)
         FROM dead_letters GROUP BY 1, 2, 3, 4`,
		`INSERT INTO dead_letter_arrivals_minute (tenant, minute, n)
         SELECT tenant, date_bin('1 minute', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), count(*)
         FROM dead_letters WHERE dead_lettered_at > now() - interval '2 days' GROUP BY 1, 2`,
		`INSERT INTO dead_letter_groups (tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id, sample_at)
         SELECT tenant, fingerprint, item_type, min(error_class), count(*), count(*) FILTER (WHERE dead_letter_unresolved(status)),
                min(dead_lettered_at), max(dead_lettered_at), max(id), (array_agg(dead_lettered_at ORDER BY id DESC))[1]
         FROM dead_letters GROUP BY 1, 2, 3`,
		`VACUUM (ANALYZE) dead_letters, dead_letter_counts, dead_letter_arrivals, dead_letter_arrivals_minute, dead_letter_arrivals_tenant_hour, dead_letter_groups, dead_letter_deltas`,
	} {
		_, err := pool.Exec(ctx, stmt)
		require.NoError(b, err)
	}
	b.Logf("removed %d dead letters a previous run ingested", tag.RowsAffected())
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

	unsustain(b, pool)
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
// and the console. With keepForever, the console runs the shipped policy
// but keeps dead letters for good: the fill spans 30 days, and retention
// would remove its oldest closed rows between runs (retention's own cost
// is measured by the dlq tests, not here).
func benchServer(b testing.TB, dbURL string, keepForever bool) (http.Handler, *http.Client, *testfactory.Console) {
	if !keepForever {
		bb := testfactory.StartConsole(b, testfactory.ConsoleOptions{DatabaseURL: dbURL})
		client, _ := bb.SignIn(b, "*:oncall")
		return bb.Handler, client, bb
	}
	policy, err := os.ReadFile(testfactory.PolicyFile())
	require.NoError(b, err)
	kept := strings.Replace(string(policy), "[retention]\nclosed = \"30d\"\nunresolved = \"90d\"", "[retention]\nclosed = \"never\"\nunresolved = \"never\"", 1)
	require.NotEqual(b, string(policy), kept, "dev/policy.toml's [retention] section moved")
	policyFile := filepath.Join(b.TempDir(), "policy.toml")
	require.NoError(b, os.WriteFile(policyFile, []byte(kept), 0o644))
	bb := testfactory.StartConsole(b, testfactory.ConsoleOptions{DatabaseURL: dbURL, Configure: func(c *app.Config) {
		c.IngestWorkers = 2 // as `console serve` by default
		c.Replay.PolicyFile = policyFile
	}})
	client, _ := bb.SignIn(b, "*:oncall")
	return bb.Handler, client, bb
}
