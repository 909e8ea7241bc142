package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/quarantine-console/quarantine/testfactory"
)

// BenchmarkHostileDeadLetterPage renders the page of a hostile dead letter
// (hostileLetter) through the whole console handler (session lookup,
// authorization, every query on real PostgreSQL, templ rendering into a
// buffer), in process, and reports the bytes allocated per page (B/op; the
// whole process's, the console's background work included) and the
// page's size (page-bytes). Sub-benchmarks do the same for the downloads of
// the whole error and of every header. Run it with make bench-hostile-page;
// figures are in docs/BENCHMARKS.md ("Hostile dead letter page").
func BenchmarkHostileDeadLetterPage(b *testing.B) {
	bb := testfactory.StartConsole(b, testfactory.ConsoleOptions{})
	id := testfactory.DeadLetter(b, bb.Pool, hostileLetter("hostile-bench"))
	client, _ := bb.SignIn(b, "acme:oncall")
	cookie := bb.SessionCookie(b, client)
	for _, sc := range []struct{ name, path string }{
		{"page", fmt.Sprintf("/deadletters/%d", id)},
		{"error.txt", fmt.Sprintf("/deadletters/%d/error.txt", id)},
		{"headers.json", fmt.Sprintf("/deadletters/%d/headers.json", id)},
	} {
		b.Run(sc.name, func(b *testing.B) {
			get := func() int {
				req := httptest.NewRequest(http.MethodGet, sc.path, nil)
				req.AddCookie(cookie)
				w := httptest.NewRecorder()
				bb.Handler.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s: %d\n%.2000s", sc.path, w.Code, w.Body.String())
				}
				return w.Body.Len()
			}
			size := get() // warm: session, plans, partition map
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				get()
			}
			b.ReportMetric(float64(size), "page-bytes")
		})
	}
}
