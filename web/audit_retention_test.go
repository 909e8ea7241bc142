package web_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// purged is a console where retention removed dead letters of acme and
// globex, under the shipped policy: acme's 2 unresolved ones of 120 days
// ago (past 90 days) and 3 discarded ones of 40 days ago (past the 30 of
// closed ones), globex's 4 and 7 of the same days, an hour later. The
// runs' own audit rows name both tenants.
type purged struct {
	b *testfactory.Console
	// acmeFrom and acmeTo are when acme's first and last were
	// dead-lettered; globex are the times of globex's, as the audit log
	// writes times.
	acmeFrom, acmeTo time.Time
	globex           []string
	// runs are the seqs of the runs' own audit rows.
	runs []int64
}

func setupPurged(t *testing.T) *purged {
	t.Helper()
	p := &purged{b: testfactory.StartConsole(t, testfactory.ConsoleOptions{})}
	today := dlq.Day(time.Now())
	seedAt := func(tenant string, n int, at time.Time, status dlq.Status) time.Time {
		ls := make([]testfactory.Letter, n)
		for i := range ls {
			ls[i] = testfactory.Letter{Tenant: tenant, ItemType: "orders.refund", At: at.Add(time.Duration(i) * time.Second),
				OperationID: fmt.Sprintf("purged-%s-%d-%d", tenant, at.Unix(), i)}
			if tenant == "globex" {
				p.globex = append(p.globex, ls[i].At.UTC().Format(time.RFC3339))
			}
		}
		ids := testfactory.DeadLetters(t, p.b.Pool, ls...)
		if status != dlq.StatusQuarantined {
			testfactory.SetStatus(t, p.b.Pool, status, ids...)
		}
		return ls[n-1].At
	}
	day, rows := today.AddDate(0, 0, -120).Add(12*time.Hour), today.AddDate(0, 0, -40).Add(12*time.Hour)
	p.acmeFrom = day
	seedAt("acme", 2, day, dlq.StatusQuarantined)
	p.acmeTo = seedAt("acme", 3, rows, dlq.StatusDiscarded)
	seedAt("globex", 4, day.Add(time.Hour), dlq.StatusQuarantined)
	seedAt("globex", 7, rows.Add(time.Hour), dlq.StatusDiscarded)

	// A keeper as the console's, under the shipped policy: it takes turns
	// with the console's own, which may have run the pass first.
	keeper := p.b.Keeper()
	wait.Until(t, "retention removed both tenants' dead letters", time.Minute, func() bool {
		_, err := keeper.Pass(context.Background())
		require.NoError(t, err)
		var left int
		require.NoError(t, p.b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters`).Scan(&left))
		return left == 0
	})
	rowsOf, err := p.b.Pool.Query(context.Background(), `SELECT seq FROM audit_log WHERE action = $1 ORDER BY seq`, dlq.ActionPurge)
	require.NoError(t, err)
	p.runs, err = pgx.CollectRows(rowsOf, pgx.RowTo[int64])
	require.NoError(t, err)
	require.NotEmpty(t, p.runs)
	return p
}

// purgeRow is an exported purge entry as an auditor reads it.
type purgeRow struct {
	Seq    int64
	Tenant string
	Action string
	Reason string
	Raw    json.RawMessage // after, as exported
	After  struct {
		Rows int64     `json:"rows"`
		From time.Time `json:"from"`
		To   time.Time `json:"to"`
		By   []struct {
			Tenant string `json:"tenant"`
			Status string `json:"status"`
			N      int64  `json:"n"`
		} `json:"by"`
	}
}

// exportJSONL is what the auditor c exports as JSON lines of the audit
// log under query, without the trailer.
func exportJSONL(t *testing.T, b *testfactory.Console, c *http.Client, query string) (string, []purgeRow) {
	t.Helper()
	resp := b.Do(t, c, http.MethodGet, "/audit/export.jsonl"+query, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	var out []purgeRow
	sc := bufio.NewScanner(strings.NewReader(resp.Body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Seq    int64           `json:"seq"`
			Tenant string          `json:"tenant"`
			Action string          `json:"action"`
			Reason string          `json:"reason"`
			After  json.RawMessage `json:"after"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		if line.Seq == 0 || !strings.HasPrefix(line.Action, "retention.purge") {
			continue // the trailer, and what else the log holds
		}
		r := purgeRow{Seq: line.Seq, Tenant: line.Tenant, Action: line.Action, Reason: line.Reason, Raw: line.After}
		require.NoError(t, json.Unmarshal(line.After, &r.After))
		out = append(out, r)
	}
	require.NoError(t, sc.Err())
	return resp.Body, out
}

// TestTenantAuditorSeesPurgesOfTheirTenant: an auditor of acme only, asked
// where acme's dead letters went, finds each retention run that removed
// some in the audit log's search (the retention family, and no filter),
// in the entry's page and in the exports (JSON lines and CSV): how many of
// acme's went, by status, and when they had been dead-lettered, acme's own
// range; the entries are the chain's own, so acme's export verifies with
// the console's public key. An auditor of every tenant sees each run's own row, naming both
// tenants, and each tenant's rows add up to what went of it.
func TestTenantAuditorSeesPurgesOfTheirTenant(t *testing.T) {
	t.Parallel()
	p := setupPurged(t)
	b := p.b
	auditor, _ := b.SignIn(t, "acme:auditor")

	body, rows := exportJSONL(t, b, auditor, "?action=retention.*")
	require.NotEmpty(t, rows, "acme's auditor finds the runs that removed acme's dead letters")
	checked, err := audit.VerifyExport(strings.NewReader(body), audit.NewKeySet(b.Signer.PublicKey()))
	require.NoError(t, err)
	assert.True(t, checked.OK(), "acme's export verifies: the entries are the chain's own, %s", checked)
	assert.LessOrEqual(t, len(rows), len(p.runs), "one entry per run, at most")
	var reasons []string // oldest first, as the exports are
	by := map[string]int64{}
	var n int64
	from, to := rows[0].After.From, rows[0].After.To
	for _, r := range rows {
		assert.Equal(t, "acme", r.Tenant)
		assert.Equal(t, dlq.ActionPurgeTenant, r.Action)
		assert.Equal(t, fmt.Sprintf("%d dead letters of acme past their retention, dead-lettered %s to %s", r.After.Rows,
			r.After.From.UTC().Format(time.RFC3339), r.After.To.UTC().Format(time.RFC3339)), r.Reason)
		reasons = append(reasons, r.Reason)
		n += r.After.Rows
		for _, b := range r.After.By {
			assert.Empty(t, b.Tenant, "a tenant's row names no tenant in its breakdown")
			by[b.Status] += b.N
		}
		assert.False(t, r.After.From.Before(p.acmeFrom) || r.After.To.After(p.acmeTo),
			"acme's own range, %s to %s, within %s to %s", r.After.From, r.After.To, p.acmeFrom, p.acmeTo)
		if r.After.From.Before(from) {
			from = r.After.From
		}
		if r.After.To.After(to) {
			to = r.After.To
		}
	}
	assert.Equal(t, int64(5), n, "every one of acme's that went")
	assert.Equal(t, map[string]int64{"quarantined": 2, "discarded": 3}, by)
	assert.True(t, from.Equal(p.acmeFrom) && to.Equal(p.acmeTo), "acme's range: %s to %s", from, to)

	for _, query := range []string{"?action=retention.*", "?action=" + dlq.ActionPurgeTenant, "?tenant=acme", ""} {
		d := b.Do(t, auditor, http.MethodGet, "/audit"+query, nil, nil).Doc(t)
		var listed []string
		byID(d, "audit-row").Each(func(_ int, s *goquery.Selection) {
			if strings.HasPrefix(text(s.Find(`td[data-label="Action"]`)), "retention.") {
				listed = append([]string{text(s.Find(`td[data-label="Reason"]`))}, listed...)
			}
		})
		assert.Equal(t, reasons, listed, "search %q", query)
	}

	csvResp := b.Do(t, auditor, http.MethodGet, "/audit/export.csv?action=retention.*", nil, nil)
	require.Equal(t, http.StatusOK, csvResp.Status, csvResp.Body)
	records, err := csv.NewReader(strings.NewReader(csvResp.Body)).ReadAll()
	require.NoError(t, err)
	var csvReasons []string
	for _, rec := range records[1 : len(records)-1] {
		if rec[7] == "" {
			continue // a stub: an entry the filter leaves out, its seq and hashes only
		}
		csvReasons = append(csvReasons, audit.CSVValue(rec[13]))
	}
	assert.Equal(t, reasons, csvReasons, "the CSV export")

	page := b.Do(t, auditor, http.MethodGet, "/audit/"+strconv.FormatInt(rows[0].Seq, 10), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	pd := page.Doc(t)
	assert.Equal(t, reasons[0], text(byID(pd, "audit-event-reason")))
	assert.Contains(t, text(byID(pd, "audit-after")), fmt.Sprintf(`"rows": %d`, rows[0].After.Rows), "the entry's page shows acme's count")

	everyone, _ := b.SignIn(t, "*:auditor")
	_, all := exportJSONL(t, b, everyone, "?action=retention.*")
	var runs []int64
	tenants := map[string]int64{}
	for _, r := range all {
		if r.Action == dlq.ActionPurge {
			runs = append(runs, r.Seq)
			assert.Empty(t, r.Tenant)
			continue
		}
		tenants[r.Tenant] += r.After.Rows
	}
	assert.Equal(t, p.runs, runs, "each run's own row, for auditors of every tenant")
	assert.Equal(t, map[string]int64{"acme": 5, "globex": 11}, tenants, "each tenant's rows add up to what went of it")
}

// TestTenantAuditorLearnsNothingOfOtherTenantsPurges: the runs that removed
// acme's dead letters removed globex's too, and an auditor of acme only
// learns nothing of that: no search (by action, by tenant, none), no
// entry's page, no export (CSV or JSON lines), nor the audit page's signed
// head, names globex, its counts, its time ranges or the runs' totals; the
// runs' own rows, which do, are not found for them (404, as an entry that
// does not exist).
func TestTenantAuditorLearnsNothingOfOtherTenantsPurges(t *testing.T) {
	t.Parallel()
	p := setupPurged(t)
	b := p.b
	auditor, _ := b.SignIn(t, "acme:auditor")
	// What would tell: globex's name, its times, its counts (4 and 7, 11
	// in all) or the runs' (6, 10 or 16), looked for in what a person
	// reads (the page's text, the CSV's values), spaces left out.
	secrets := append([]string{"globex"}, p.globex...)
	for _, n := range []int{4, 7, 11, 6, 10, 16} {
		secrets = append(secrets, fmt.Sprintf("%d dead letters", n), fmt.Sprintf(`"rows":%d`, n), fmt.Sprintf(`"rows": %d`, n),
			fmt.Sprintf(`"n":%d`, n), fmt.Sprintf(`"n": %d`, n))
	}
	tells := func(t *testing.T, where, read string, echoed ...string) {
		t.Helper()
		read = strings.Join(strings.Fields(read), "")
		for _, s := range secrets {
			if slices.Contains(echoed, s) {
				continue
			}
			assert.NotContains(t, read, strings.Join(strings.Fields(s), ""), "%s tells %q", where, s)
		}
	}
	page := func(resp testfactory.Response) string { return resp.Doc(t).Text() }
	values := func(resp testfactory.Response) string {
		records, err := csv.NewReader(strings.NewReader(resp.Body)).ReadAll()
		require.NoError(t, err)
		var cells []string
		for _, rec := range records {
			for _, c := range rec {
				cells = append(cells, audit.CSVValue(c))
			}
		}
		return strings.Join(cells, "\n")
	}

	for _, query := range []string{"", "?action=retention.*", "?action=" + dlq.ActionPurge, "?action=" + dlq.ActionPurgeTenant,
		"?tenant=globex", "?object=dead_letters+rows"} {
		resp := b.Do(t, auditor, http.MethodGet, "/audit"+query, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, "search %q", query)
		// The filter shows what the auditor typed; nothing else says it.
		echoed := []string{}
		if strings.Contains(query, "globex") {
			echoed = append(echoed, "globex")
		}
		tells(t, "search "+query, page(resp), echoed...)
		byID(resp.Doc(t), "audit-row").Each(func(_ int, s *goquery.Selection) {
			assert.Equal(t, "acme", text(s.Find(`td[data-label="Tenant"]`)), "search %q", query)
		})
		export := b.Do(t, auditor, http.MethodGet, "/audit/export.csv"+query, nil, nil)
		require.Equal(t, http.StatusOK, export.Status)
		// An export's trailer records the filter it was made with.
		tells(t, "CSV export "+query, values(export), echoed...)
		export = b.Do(t, auditor, http.MethodGet, "/audit/export.jsonl"+query, nil, nil)
		require.Equal(t, http.StatusOK, export.Status)
		tells(t, "JSON lines export "+query, export.Body, echoed...)
	}
	_, rows := exportJSONL(t, b, auditor, "")
	require.NotEmpty(t, rows, "acme's auditor finds acme's purges")
	for _, r := range rows {
		// Every number acme's rows hold is one of acme's counts (2, 3, 5
		// in all), whatever field holds it.
		var after any
		require.NoError(t, json.Unmarshal(r.Raw, &after))
		for _, n := range numbers(after) {
			assert.Contains(t, []float64{2, 3, 5}, n, "seq %d's after holds %v: %s", r.Seq, n, r.Raw)
		}
		resp := b.Do(t, auditor, http.MethodGet, "/audit/"+strconv.FormatInt(r.Seq, 10), nil, nil)
		require.Equal(t, http.StatusOK, resp.Status)
		tells(t, "acme's entry page", page(resp))
	}
	for _, seq := range p.runs {
		resp := b.Do(t, auditor, http.MethodGet, "/audit/"+strconv.FormatInt(seq, 10), nil, nil)
		assert.Equal(t, http.StatusNotFound, resp.Status, "the run's own row, naming globex")
		tells(t, "the run's own row's page", page(resp))
	}
	var globexRow int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT seq FROM audit_log WHERE action = $1 AND tenant = 'globex' LIMIT 1`,
		dlq.ActionPurgeTenant).Scan(&globexRow))
	assert.Equal(t, http.StatusNotFound, b.Do(t, auditor, http.MethodGet, "/audit/"+strconv.FormatInt(globexRow, 10), nil, nil).Status)
}

// numbers are the numbers anywhere in v, a decoded JSON value.
func numbers(v any) []float64 {
	switch v := v.(type) {
	case float64:
		return []float64{v}
	case []any:
		var out []float64
		for _, e := range v {
			out = append(out, numbers(e)...)
		}
		return out
	case map[string]any:
		var out []float64
		for _, e := range v {
			out = append(out, numbers(e)...)
		}
		return out
	}
	return nil
}
