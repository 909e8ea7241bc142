package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// tracedConsole is a console whose web pool's round trips are recorded.
func tracedConsole(t *testing.T) (*testfactory.Console, *testfactory.Statements) {
	t.Helper()
	st := &testfactory.Statements{}
	c := testfactory.StartConsole(t, testfactory.ConsoleOptions{Configure: func(cfg *app.Config) { cfg.WebTracer = st }})
	return c, st
}

// roundTrips requests path as client twice to warm it up (sessions, the
// counters snapshot, prepared statements), then once more, and returns the
// round trips to PostgreSQL that last request made.
func roundTrips(t *testing.T, c *testfactory.Console, st *testfactory.Statements, client *http.Client, path string) []string {
	t.Helper()
	for range 2 {
		resp := c.Do(t, client, "GET", path, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	}
	st.Reset()
	resp := c.Do(t, client, "GET", path, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	return st.Take()
}

// TestStatementsPerPage counts, with a pgx tracer on the web pool, the
// round trips to PostgreSQL of the triage pages for a signed-in person
// whose session is warm: the list at most 2, a dead letter at most 3, the
// dashboard at most 2, the session's read included; and none of them
// writes the session.
func TestStatementsPerPage(t *testing.T) {
	t.Parallel()
	c, st := tracedConsole(t)
	var letters []testfactory.Letter
	for i := range 120 {
		letters = append(letters, testfactory.Letter{
			Tenant: []string{"acme", "globex"}[i%2], ItemType: []string{"orders.refund", "email.send", "search.index_update"}[i%3],
			Class: []string{"transient", "permanent"}[i%2], Error: fmt.Sprintf("order %d failed", i), MsgID: fmt.Sprintf("m-%d", i),
		})
	}
	ids := testfactory.DeadLetters(t, c.DB.Pool, letters...)
	client, _ := c.SignIn(t, "acme:oncall", "globex:oncall")

	for _, page := range []struct {
		name, path string
		most       int
	}{
		{"List", "/deadletters", 2},
		{"ListFiltered", "/deadletters?tenant=acme&type=orders.refund&class=transient", 2},
		{"ListNextPage", "", 2},
		{"Detail", fmt.Sprintf("/deadletters/%d", ids[7]), 3},
		{"Dashboard", "/", 2},
	} {
		t.Run(page.name, func(t *testing.T) {
			path := page.path
			if path == "" { // the second page, by the first page's cursor
				d := c.Do(t, client, "GET", "/deadletters", nil, nil).Doc(t)
				next, ok := byID(d, "pager-next").Attr("href")
				require.True(t, ok, "a second page")
				path = next
			}
			trips := roundTrips(t, c, st, client, path)
			assert.LessOrEqual(t, len(trips), page.most, "round trips of %s:\n%s", path, strings.Join(trips, "\n"))
			for _, trip := range trips {
				assert.NotContains(t, trip, "INSERT INTO sessions", "a warm session is not written again")
			}
		})
	}

	// An approver's pages show how many requests wait for them, within the
	// same round trips.
	approver, _ := c.SignIn(t, "acme:oncall", "globex:oncall", "acme:approver")
	_, requester := c.SignIn(t, "acme:oncall")
	refund := testfactory.DeadLetter(t, c.DB.Pool, testfactory.Letter{Tenant: "acme", ItemType: "ledger.delete", MsgID: "led-st", Payload: []byte(`{}`)})
	testfactory.Request(t, c.Replays, requester.Actor, []int64{refund}, replay.SubmitInput{})
	for _, page := range []struct {
		name, path string
		most       int
	}{
		{"ApproverList", "/deadletters", 2},
		{"ApproverDetail", fmt.Sprintf("/deadletters/%d", ids[7]), 3},
		{"ApproverDashboard", "/", 2},
	} {
		t.Run(page.name, func(t *testing.T) {
			trips := roundTrips(t, c, st, approver, page.path)
			assert.LessOrEqual(t, len(trips), page.most, "round trips of %s:\n%s", page.path, strings.Join(trips, "\n"))
			d := c.Do(t, approver, "GET", page.path, nil, nil).Doc(t)
			assert.Equal(t, "1", strings.TrimSpace(byID(d, "nav-approvals-count").Text()), "the request waiting for them")
		})
	}
}

// counterTables matches a statement that reads a counter table.
var counterTables = regexp.MustCompile(`dead_letter_(counts|groups|arrivals)`)

// TestScopeNotQueriedPerRequest records, with a pgx tracer on the web pool,
// what a warm signed-in list request sends: the tenants of its scope and
// the filter choices (item types, classes) come from the process's
// snapshot, not from the counter tables; the only counter the list reads
// is the exact count it shows, and a filter the counters cannot count
// reads none. A tenant that appears later is in the scope of someone who
// sees every tenant as soon as its first dead letter is stored.
func TestScopeNotQueriedPerRequest(t *testing.T) {
	t.Parallel()
	c, st := tracedConsole(t)
	testfactory.DeadLetters(t, c.DB.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund"}, testfactory.Letter{Tenant: "globex", ItemType: "email.send"},
		testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", Class: "transient"})
	client, _ := c.SignIn(t, "*:oncall")

	trips := roundTrips(t, c, st, client, "/deadletters")
	var counters []string
	for _, trip := range trips {
		for _, stmt := range strings.Split(strings.TrimPrefix(trip, "BATCH: "), " ; ") {
			if counterTables.MatchString(stmt) {
				counters = append(counters, stmt)
			}
		}
	}
	require.Len(t, counters, 1, "the list reads the counters once, for its count: %q", counters)
	assert.Regexp(t, `^SELECT coalesce\(sum\(n\), 0\)::bigint FROM dead_letter_counts`, counters[0], "and only to count")

	since := url.Values{"from": {time.Now().Add(-24 * time.Hour).UTC().Format("2006-01-02T15:04")}}
	trips = roundTrips(t, c, st, client, "/deadletters?"+since.Encode())
	for _, trip := range trips {
		assert.NotRegexp(t, counterTables, trip, "a filter the counters cannot count reads no counter")
	}

	d := c.Do(t, client, "GET", "/deadletters", nil, nil).Doc(t)
	assert.Equal(t, "email.send orders.refund search.index_update", strings.Join(optionValues(d, "type"), " "), "the item types come from the snapshot")
	assert.Equal(t, "acme globex", strings.Join(optionValues(d, "tenant"), " "))

	testfactory.DeadLetters(t, c.DB.Pool, testfactory.Letter{Tenant: "initech", ItemType: "billing.invoice_create"})
	wait.Until(t, "the new tenant and item type in the choices", 30*time.Second, func() bool {
		d := c.Do(t, client, "GET", "/deadletters", nil, nil).Doc(t)
		return strings.Join(optionValues(d, "tenant"), " ") == "acme globex initech" &&
			strings.Contains(strings.Join(optionValues(d, "type"), " "), "billing.invoice_create")
	})
}

// optionValues are the values of the select name's options, but its
// placeholder.
func optionValues(d *goquery.Document, name string) []string {
	var out []string
	d.Find(`select[name="` + name + `"] option`).Each(func(_ int, s *goquery.Selection) {
		if v := s.AttrOr("value", ""); v != "" {
			out = append(out, v)
		}
	})
	return out
}
