package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Start is what a process does while it starts (waits for PostgreSQL,
// NATS, the identity provider, and the steps between), and answers its
// probes meanwhile on the addresses it serves from once started: /healthz
// 200, because the process is alive and waiting as told (an orchestrator
// that took a failed liveness probe for a hung process would restart every
// replica of a console waiting for its database, for ever), and /readyz
// 503 naming what it waits for (Probes). The zero value is a process
// starting that has named no step yet.
type Start struct {
	step atomic.Pointer[startStep]
	now  func() time.Time // nil: time.Now
}

// startStep is one step of a start: what is done, and for a wait the
// setting that bounds it.
type startStep struct {
	doing   string        // "waiting for PostgreSQL"
	setting string        // "DATABASE_WAIT"; empty for a step that is not a wait
	limit   time.Duration // the setting's value
	since   time.Time
}

// Wait records that the process now waits up to limit, the value of
// setting, for dependency ("PostgreSQL", named as the log names it).
func (s *Start) Wait(dependency, setting string, limit time.Duration) {
	s.step.Store(&startStep{doing: "waiting for " + dependency, setting: setting, limit: limit, since: s.clock()})
}

// Step records that the process now does doing ("checking the database
// schema"), which no setting bounds.
func (s *Start) Step(doing string) {
	s.step.Store(&startStep{doing: doing, since: s.clock()})
}

func (s *Start) clock() time.Time {
	if s.now == nil {
		return time.Now()
	}
	return s.now()
}

// Doing is what /readyz says while the process starts: "waiting for
// PostgreSQL at start (DATABASE_WAIT 2m, 35s so far)". It names the
// dependency and the setting, never an address or an error's text (the
// log has those), as /readyz never does.
func (s *Start) Doing() string {
	st := s.step.Load()
	if st == nil {
		return "starting"
	}
	so := roundDuration(s.clock().Sub(st.since)) + " so far"
	if st.setting != "" {
		return fmt.Sprintf("%s at start (%s %s, %s)", st.doing, st.setting, roundDuration(st.limit), so)
	}
	return fmt.Sprintf("%s at start (%s)", st.doing, so)
}

// roundDuration is d to the second, without a trailing zero unit: 2m, 1m30s, 35s.
func roundDuration(d time.Duration) string {
	str := max(d, 0).Round(time.Second).String()
	if strings.HasSuffix(str, "m0s") {
		str = strings.TrimSuffix(str, "0s")
	}
	if strings.HasSuffix(str, "h0m") {
		str = strings.TrimSuffix(str, "0m")
	}
	return str
}

// Probes answers /healthz (200) and /readyz (503 with Doing) while the
// process starts, and every other request 503, until its Ready: for a
// listener that serves the probes once started (serve's CONSOLE_ADDR,
// console worker's METRICS_ADDR), so that probes configured for the
// started process find the same address while it starts.
func (s *Start) Probes() *Handover {
	return &Handover{before: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch {
		case (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Path == "/healthz":
			noStore(rw)
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(rw, "ok\n")
		case (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Path == "/readyz":
			code, body := Readiness([]string{s.Doing()}, nil)
			noStore(rw)
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(code)
			_ = json.NewEncoder(rw).Encode(body)
		default:
			s.unavailable(rw)
		}
	})}
}

// Unavailable answers every request 503 while the process starts, until
// its Ready: for a listener that serves no probes (serve's METRICS_ADDR),
// so that a scrape fails while the process cannot answer it yet.
func (s *Start) Unavailable() *Handover {
	return &Handover{before: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { s.unavailable(rw) })}
}

// unavailable is the 503 of a request a starting process does not serve;
// its body says what the process does, as /readyz does.
func (s *Start) unavailable(rw http.ResponseWriter) {
	noStore(rw)
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("Retry-After", "5")
	rw.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(rw, s.Doing()+"\n")
}

// noStore keeps a starting process's answers out of caches, and tells
// browsers to take them for what they say they are.
func noStore(rw http.ResponseWriter) {
	rw.Header().Set("Cache-Control", "no-store")
	rw.Header().Set("X-Content-Type-Options", "nosniff")
}

// Handover is the handler of a listener opened before its process
// started: it answers as the Start that made it says until Ready gives it
// the started process's handler, which serves every request from then on.
type Handover struct {
	before http.Handler
	after  atomic.Pointer[http.Handler]
}

// ServeHTTP serves r with the started process's handler once Ready gave
// it, else as a starting process.
func (h *Handover) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if next := h.after.Load(); next != nil {
		(*next).ServeHTTP(rw, r)
		return
	}
	h.before.ServeHTTP(rw, r)
}

// Ready hands every request from now on to next.
func (h *Handover) Ready(next http.Handler) { h.after.Store(&next) }
