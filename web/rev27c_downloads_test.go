package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevRetention27ASmallPoolRunsFewerExports: a console whose pools are
// made small (pool_max_conns=8) runs at most a quarter of its web pool's
// connections as exports at once (two): a third person's export is
// refused at once, with Retry-After, and the pages keep the rest.
func TestRevRetention27ASmallPoolRunsFewerExports(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	u, err := url.Parse(db.URL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("pool_max_conns", "8")
	u.RawQuery = q.Encode()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{DatabaseURL: u.String()})
	require.Equal(t, int32(8), b.Pool.Stat().MaxConns(), "precondition: the web pool is small")
	big := strings.Repeat("x", 30<<10)
	events := make([]audit.Event, 200)
	for i := range events {
		events[i] = audit.Event{Tenant: "acme", Action: "test.bulk", Outcome: audit.OutcomeOK,
			Before: map[string]any{"blob": big}, After: map[string]any{"blob": big}}
	}
	// Twelve MB of rows: written under the test's context, not
	// AppendBatchFunc's ten-second bound for recording what happened,
	// which a loaded machine can take longer than.
	require.NoError(t, pgx.BeginFunc(t.Context(), b.Pool, func(tx pgx.Tx) error {
		_, err := audit.AppendBatch(t.Context(), tx, events)
		return err
	}))

	var cookies []*http.Cookie
	for range 3 {
		c, _ := b.SignIn(t, "acme:auditor")
		cookies = append(cookies, b.SessionCookie(t, c))
	}
	for _, ck := range cookies[:2] {
		status, _, _ := stalledExport(t, b, ck, "/audit/export.jsonl")
		require.Equal(t, http.StatusOK, status, "two exports run on a web pool of 8")
	}
	status, body, h := stalledExport(t, b, cookies[2], "/audit/export.jsonl")
	assert.Equal(t, http.StatusTooManyRequests, status, "a third export would hold more than a quarter of the pool")
	assert.Equal(t, "30", h.Get("Retry-After"))
	assert.Contains(t, body, "as many exports as it can at once")
	oncall, _ := b.SignIn(t, "acme:oncall")
	assert.Equal(t, http.StatusOK, b.Do(t, oncall, http.MethodGet, "/deadletters", nil, nil).Status, "the pages answer")
}
