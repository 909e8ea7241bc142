package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev44PagesWhilePostgresRestartsSayWhatHappened: while PostgreSQL
// refuses connections (a restart, a failover), a signed-in person's
// session cannot be read, and scs's default answered every page and htmx
// request "Internal Server Error" as plain text, its cause on the standard
// logger only (review round 44). They get the console's page, 503, saying
// the database does not answer and to try again, with the request id; and
// once it answers again they are still signed in.
func TestRev44PagesWhilePostgresRestartsSayWhatHappened(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	c, _ := b.SignIn(t, "acme:oncall")
	require.Equal(t, http.StatusOK, b.Do(t, c, http.MethodGet, "/", nil, map[string]string{"Accept": "text/html"}).Status)

	cfg, err := pgx.ParseConfig(b.DB.AdminURL)
	require.NoError(t, err)
	cfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close(ctx) })
	allow := func(on bool) {
		_, err := admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %q ALLOW_CONNECTIONS %t`, b.DB.Name, on))
		require.NoError(t, err)
	}
	allow(false)
	t.Cleanup(func() { allow(true) })
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, b.DB.Name)
	require.NoError(t, err)

	page := b.Do(t, c, http.MethodGet, "/", nil, map[string]string{"Accept": "text/html"})
	assert.Equal(t, http.StatusServiceUnavailable, page.Status, page.Body)
	assert.Contains(t, page.Header.Get("Content-Type"), "text/html")
	doc := page.Doc(t)
	assert.Contains(t, doc.Find("main").Text(), "Database not answering")
	assert.Contains(t, doc.Find("main").Text(), "you stay signed in")
	assert.Contains(t, page.Body, page.Header.Get("X-Request-Id"), "the page shows the request id to quote")
	htmx := b.Do(t, c, http.MethodGet, "/", nil, map[string]string{"Accept": "text/html", "HX-Request": "true"})
	assert.Equal(t, http.StatusServiceUnavailable, htmx.Status)
	assert.NotEqual(t, "Internal Server Error\n", htmx.Body)
	api := b.Do(t, c, http.MethodGet, "/", nil, map[string]string{"Accept": "application/json"})
	assert.Equal(t, http.StatusServiceUnavailable, api.Status)
	assert.Contains(t, api.Body, "cannot reach its database")

	allow(true)
	wait.Until(t, "the page again, signed in", 30e9, func() bool {
		// A pooled connection killed in the cut fails one request once.
		return b.Do(t, c, http.MethodGet, "/", nil, map[string]string{"Accept": "text/html"}).Status == http.StatusOK
	})
	assert.Contains(t, b.Do(t, c, http.MethodGet, "/", nil, map[string]string{"Accept": "text/html"}).Body, "oncall")
}

// TestRev44ChangeDoneWhenItsSessionIsNotSavedIsNotCalledFailed: a discard
// commits and is audited; then the session's write, carrying its flash,
// fails (PostgreSQL went away between the two). scs's default turned the
// handler's 303 into a plain "Internal Server Error": the person read a
// done change as failed (review round 44). The 303 goes out, to the dead
// letter's page, which shows it discarded.
func TestRev44ChangeDoneWhenItsSessionIsNotSavedIsNotCalledFailed(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "orders.refund", "rev44-unsaved-1", nil)
	_, err := b.DB.OwnerPool.Exec(ctx, `CREATE FUNCTION rev44_refuse() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'rev44: gone'; END$$;
		CREATE TRIGGER rev44_refuse BEFORE INSERT OR UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION rev44_refuse()`)
	require.NoError(t, err)
	path := "/deadletters/" + strconv.FormatInt(id, 10)
	resp := b.Do(t, oncall, http.MethodPost, path+"/discard", url.Values{"reason": {"duplicate"}, "confirmed": {"1"}},
		map[string]string{"Accept": "text/html"})
	assert.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	assert.Equal(t, path, resp.Header.Get("Location"))
	var status string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&status))
	assert.Equal(t, "discarded", status)
	shown := b.Do(t, oncall, http.MethodGet, path, nil, map[string]string{"Accept": "text/html"})
	assert.Equal(t, http.StatusOK, shown.Status)
	assert.Contains(t, shown.Body, "discarded")
}
