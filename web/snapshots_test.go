//go:build snapshots

package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTriageSnapshots writes the triage pages, rendered from the benchmark
// database, as HTML files next to a copy of the static files into
// $SNAPSHOT_DIR, for looking at with scripts/screenshot.sh (serve the
// directory with python3 -m http.server --bind 127.0.0.1). It is a tool,
// not a test: it builds only with -tags snapshots.
func TestTriageSnapshots(t *testing.T) {
	dir := os.Getenv("SNAPSHOT_DIR")
	if dir == "" {
		t.Fatal("set SNAPSHOT_DIR to the folder to write the pages into")
	}
	rows := 1_000_000
	if v := os.Getenv("BENCH_ROWS"); v != "" {
		var err error
		rows, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	pool, dbURL := benchDatabase(t, rows)
	h, client, bb := benchServer(t, dbURL, false)
	cookie := bb.SessionCookie(t, client)
	admin, _ := bb.SignIn(t, "*:admin")
	adminCookie := bb.SessionCookie(t, admin)
	require.NoError(t, os.MkdirAll(dir+"/static", 0o755))
	for _, name := range []string{"app.css", "app.js", "htmx.min.js", "favicon.svg"} {
		data, err := os.ReadFile("static/" + name)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dir+"/static/"+name, data, 0o644))
	}
	var big, binary, hostile, plain int64
	ctx := context.Background()
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM dead_letters WHERE payload_size > 70000 LIMIT 1`).Scan(&big))
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM dead_letters WHERE get_byte(payload, 0) = 31 AND payload_size > 200 LIMIT 1`).Scan(&binary))
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM dead_letters WHERE correlation_id LIKE '%onerror%' LIMIT 1`).Scan(&hostile))
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM dead_letters WHERE item_type = 'orders.refund' AND status = 'quarantined' AND payload_size BETWEEN 200 AND 2000 ORDER BY id DESC LIMIT 1`).Scan(&plain))
	pages := map[string]string{
		"dashboard.html":   "/",
		"dashboard7d.html": "/?span=7d",
		"list.html":        "/deadletters",
		"list-filter.html": "/deadletters?tenant=acme&status=unresolved&type=orders.refund",
		"list-search.html": "/deadletters?q=connection+refused&count=1",
		"list-empty.html":  "/deadletters?q=no+such+words+anywhere&count=1",
		"groups.html":      "/groups",
		"detail.html":      fmt.Sprintf("/deadletters/%d", plain),
		"detail-big.html":  fmt.Sprintf("/deadletters/%d", big),
		"detail-bin.html":  fmt.Sprintf("/deadletters/%d", binary),
		"detail-evil.html": fmt.Sprintf("/deadletters/%d", hostile),
	}
	pages["policy.html"] = "/policy"
	for file, path := range pages {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if file == "policy.html" {
			req.AddCookie(adminCookie)
		} else {
			req.AddCookie(cookie)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		require.Equal(t, http.StatusOK, w.Code, path)
		require.NoError(t, os.WriteFile(dir+"/"+file, w.Body.Bytes(), 0o644))
	}
	t.Logf("wrote %d pages to %s", len(pages), dir)
}
