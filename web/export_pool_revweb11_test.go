package web_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb11StalledExportsTakeTheWholeConsole: an audit export streams
// from a read-only transaction on the web pool (20 connections) for as
// long as the client takes, up to the server's write timeout (5 min) and
// the export's statement_timeout (5 min). Nothing bounds how many run at
// once: a person with the export right in one tenant (a tenant auditor)
// who starts as many exports as the pool has connections, and reads none
// of them (a script, or a browser on a bad link), holds every connection
// of the web pool. Every other request of every person then waits for a
// connection (the session's read comes first): the dashboard, the
// quarantine list, approvals and the emergency stop page hang on this
// replica for minutes, and it can be started again at once. /readyz still
// says ready (pingPostgres opens its own connection when the pool is
// full), so the load balancer keeps sending people there.
//
// Severity: medium (one tenant's auditor, or a script holding their
// session, takes the console away from everyone during an incident).
// Expected: exports are bounded (say one per person and a few per
// replica, the others answered 429 or 503 at once), or stream from
// connections that are not the pages' pool, so that the pages keep
// working.
func TestRevWeb11StalledExportsTakeTheWholeConsole(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := t.Context()

	// A log of some 13 MB: more than the kernel buffers of a connection
	// hold, so an export nobody reads blocks on its writes.
	big := strings.Repeat("x", 30<<10)
	events := make([]audit.Event, 200)
	for i := range events {
		events[i] = audit.Event{Tenant: "acme", Action: "test.bulk", Outcome: audit.OutcomeOK,
			Before: map[string]any{"blob": big}, After: map[string]any{"blob": big}}
	}
	_, err := audit.AppendBatchFunc(ctx, b.Pool, events)
	require.NoError(t, err)

	auditor, _ := b.SignIn(t, "acme:auditor")
	cookie := b.SessionCookie(t, auditor)
	oncall, _ := b.SignIn(t, "acme:oncall")
	require.Equal(t, http.StatusOK, b.Do(t, oncall, http.MethodGet, "/deadletters", nil, nil).Status, "precondition: the list answers")

	// A client that reads nothing: a small receive buffer, one connection
	// per export.
	stalled := func() *http.Client {
		d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			if err != nil {
				return err
			}
			return serr
		}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true, ResponseHeaderTimeout: 30 * time.Second}}
	}
	n := int(b.Pool.Stat().MaxConns())
	var (
		mu       sync.Mutex
		statuses []int
		bodies   []*http.Response
		wg       sync.WaitGroup
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range bodies {
			r.Body.Close()
		}
	})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, b.URL()+"/audit/export.jsonl", nil)
			if err != nil {
				return
			}
			req.AddCookie(cookie)
			resp, err := stalled().Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				statuses = append(statuses, 0)
				return
			}
			statuses = append(statuses, resp.StatusCode)
			bodies = append(bodies, resp) // never read
		}()
	}
	wg.Wait() // every export answered its headers, was refused, or gave up waiting (30 s)
	t.Logf("%d exports started by one tenant auditor, answered %v; web pool: %d of %d connections taken",
		n, statuses, b.Pool.Stat().AcquiredConns(), b.Pool.Stat().MaxConns())

	// Another person opens the quarantine list.
	page := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, b.URL()+"/deadletters", nil)
		c := &http.Client{Jar: oncall.Jar, Timeout: 10 * time.Second, CheckRedirect: oncall.CheckRedirect}
		resp, err := c.Do(req)
		if err != nil {
			page <- 0
			return
		}
		resp.Body.Close()
		page <- resp.StatusCode
	}()
	status := <-page
	if r, err := (&http.Client{Timeout: 5 * time.Second}).Get(b.URL() + "/readyz"); err == nil {
		t.Logf("meanwhile /readyz answers %d", r.StatusCode)
		r.Body.Close()
	}
	assert.Equal(t, http.StatusOK, status,
		"one tenant auditor's unread exports hold every connection of the web pool: the on-call's quarantine list gets no answer within 10 s")
}
