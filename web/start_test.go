package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestStartAnswersProbesUntilReady: a starting process answers /healthz
// 200 and /readyz 503 saying what it waits for, for how long and how long
// so far, everything else 503; from Ready on, its handler answers all.
func TestStartAnswersProbesUntilReady(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	s := &Start{now: func() time.Time { return clock }}
	h := s.Probes()
	metrics := s.Unavailable()
	get := func(h http.Handler, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}

	code, body := get(h, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.JSONEq(t, `{"ready":false,"problems":["starting"]}`, body)

	s.Wait("PostgreSQL", "DATABASE_WAIT", 2*time.Minute)
	clock = clock.Add(35*time.Second + 400*time.Millisecond)
	code, body = get(h, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	code, body = get(h, "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.JSONEq(t, `{"ready":false,"problems":["waiting for PostgreSQL at start (DATABASE_WAIT 2m, 35s so far)"]}`, body)
	code, body = get(h, "/metrics")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "waiting for PostgreSQL at start (DATABASE_WAIT 2m, 35s so far)\n", body)
	code, _ = get(metrics, "/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, code, "a listener without probes serves none while starting")

	s.Wait("the identity provider", "OIDC_WAIT", 90*time.Second)
	clock = clock.Add(61 * time.Second)
	_, body = get(h, "/readyz")
	assert.Contains(t, body, "waiting for the identity provider at start (OIDC_WAIT 1m30s, 1m1s so far)")
	s.Step("checking the database schema and role")
	_, body = get(h, "/readyz")
	assert.Contains(t, body, "checking the database schema and role at start (0s so far)")

	h.Ready(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { rw.WriteHeader(http.StatusTeapot) }))
	for _, path := range []string{"/healthz", "/readyz", "/"} {
		code, _ = get(h, path)
		assert.Equal(t, http.StatusTeapot, code, path)
	}
	code, _ = get(metrics, "/metrics")
	assert.Equal(t, http.StatusServiceUnavailable, code, "each listener is handed over on its own")
}
