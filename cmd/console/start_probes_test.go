package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestProbesWhileWaitingAtStart: serve and console worker, started while
// PostgreSQL or NATS (or, for serve, the identity provider) does not
// answer, answer their probes on the
// addresses probes ask once they started (serve's CONSOLE_ADDR, the
// worker's METRICS_ADDR) while they wait: /healthz 200, /readyz 503
// naming what they wait for and the setting that bounds it, and nothing
// of the connection; /metrics 503. Once the dependency answers they are
// ready, on the same address. Before, nothing listened until the waits
// ended, and a liveness probe restarted every replica waiting for its
// database.
func TestProbesWhileWaitingAtStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, cmd, dep string }{
		{"ServeWaitingForPostgreSQL", "serve", "PostgreSQL"},
		{"ServeWaitingForNATS", "serve", "NATS"},
		{"ServeWaitingForTheIdentityProvider", "serve", "the identity provider"},
		{"WorkerWaitingForPostgreSQL", "worker", "PostgreSQL"},
		{"WorkerWaitingForNATS", "worker", "NATS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			probesWhileWaiting(t, tc.cmd, tc.dep)
		})
	}
}

func probesWhileWaiting(t *testing.T, cmd, dep string) {
	db := testdb.New(t)
	dbURL, pgAddr := db.URL, fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	natsPort := freeTCPPort(t)
	startNATS := func() {
		startNATSServer(t, &server.Options{Host: "127.0.0.1", Port: natsPort, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	}
	// The identity provider listens at idpAddr once up.
	idpAddr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	idp := testidp.New(t, idpAddr)
	startIdP := func() { idp.Listen(t) }
	var up func()
	switch dep {
	case "PostgreSQL":
		// Nothing listens at pgAddr until up forwards it to the server.
		dbURL = withHost(t, db.URL, pgAddr)
		up = func() { forward(t, pgAddr, urlHost(t, db.URL)) }
		startNATS()
		startIdP()
	case "NATS":
		up = startNATS
		startIdP()
	case "the identity provider":
		up = startIdP
		startNATS()
	}
	e := map[string]string{
		"DATABASE_URL": dbURL, "DATABASE_WAIT": "2m", "NATS_URL": fmt.Sprintf("nats://127.0.0.1:%d", natsPort), "NATS_WAIT": "2m",
		"POLICY_FILE": "../../dev/policy.toml",
	}
	probeAddr, metricsAddr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t)), ""
	switch cmd {
	case "serve":
		metricsAddr = fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
		e["CONSOLE_ADDR"], e["METRICS_ADDR"] = probeAddr, metricsAddr
		e["OIDC_ISSUER"], e["OIDC_CLIENT_ID"], e["OIDC_CLIENT_SECRET"] = idp.Issuer, idp.ClientID, idp.ClientSecret
		e["OIDC_WAIT"] = "2m"
		e["AUDIT_SIGNING_KEY_FILE"] = newKeyFile(t)
	case "worker":
		metricsAddr = probeAddr
		e["METRICS_ADDR"] = probeAddr
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &logs.Buffer{}, &logs.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"console", cmd}, env(e), stdout, stderr) }()
	running := func() {
		select {
		case err := <-done:
			t.Fatalf("console %s stopped: %v\n%s", cmd, err, stderr.String())
		default:
		}
	}

	// It has tried and waits on: what it answers now, it answers for the
	// rest of the wait.
	wait.Until(t, "console "+cmd+" to wait for "+dep, time.Minute, func() bool {
		running()
		return containsLine(stderr, "waiting for "+dep)
	})
	code, body, err := probe(probeAddr, "/healthz")
	require.NoError(t, err, "the probes' address listens while it waits")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)

	code, body, err = probe(probeAddr, "/readyz")
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	var ready struct {
		Ready    bool
		Problems []string
	}
	require.NoError(t, json.Unmarshal([]byte(body), &ready), body)
	assert.False(t, ready.Ready)
	setting := map[string]string{"PostgreSQL": "DATABASE_WAIT", "NATS": "NATS_WAIT", "the identity provider": "OIDC_WAIT"}[dep]
	require.Len(t, ready.Problems, 1, body)
	assert.Regexp(t, regexp.MustCompile(`^waiting for `+dep+` at start \(`+setting+` 2m, \d+s so far\)$`), ready.Problems[0])
	_, pgPort, _ := net.SplitHostPort(pgAddr)
	_, idpPort, _ := net.SplitHostPort(idpAddr)
	for _, secret := range []string{"127.0.0.1", pgPort, fmt.Sprint(natsPort), idpPort, testdb.RuntimeRole, "refused", "dial", "nats://", "postgres", "http"} {
		assert.NotContains(t, body, secret, "/readyz is public: it names the wait, never the connection or the error")
	}

	code, body, err = probe(metricsAddr, "/metrics")
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, code, "/metrics once it can be answered: %s", body)
	if cmd == "serve" {
		code, _, err = probe(probeAddr, "/")
		require.NoError(t, err)
		assert.Equal(t, http.StatusServiceUnavailable, code, "no page before the console started")
	}

	up()
	wait.Until(t, "console "+cmd+" to be ready once "+dep+" answers", 2*time.Minute, func() bool {
		running()
		code, body, err = probe(probeAddr, "/readyz")
		return err == nil && code == http.StatusOK
	})
	assert.JSONEq(t, `{"ready":true}`, body)
	code, _, err = probe(probeAddr, "/healthz")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	code, body, err = probe(metricsAddr, "/metrics")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "go_goroutines")

	cancel()
	require.NoError(t, receive(t, done, time.Minute), stderr.String())
}

// TestStartWaitGivesUp: a wait that ends without PostgreSQL ends serve and
// console worker with an error (exit status 1), as before the probes were
// answered during it, and closes their listeners.
func TestStartWaitGivesUp(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	unreachable := withHost(t, db.URL, fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t)))
	for _, cmd := range []string{"serve", "worker"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			addr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
			e := map[string]string{"DATABASE_URL": unreachable, "DATABASE_WAIT": "1s", "POLICY_FILE": "../../dev/policy.toml",
				"NATS_URL": "nats://127.0.0.1:1", "METRICS_ADDR": addr}
			if cmd == "serve" {
				e["CONSOLE_ADDR"], e["METRICS_ADDR"] = addr, "off"
				e["OIDC_ISSUER"], e["OIDC_CLIENT_ID"], e["AUDIT_SIGNING_KEY_FILE"] = "http://127.0.0.1:1/dex", "c", newKeyFile(t)
			}
			err := run(context.Background(), []string{"console", cmd}, env(e), io.Discard, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "PostgreSQL at DATABASE_URL did not answer")
			assert.Equal(t, 1, exitCode(err))
			_, _, err = probe(addr, "/healthz")
			assert.Error(t, err, "the listener closed with the process")
		})
	}
}

// probe asks GET path of the listener at addr.
func probe(addr, path string) (int, string, error) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// withHost is the PostgreSQL URL u with host:port addr.
func withHost(t *testing.T, u, addr string) string {
	t.Helper()
	p, err := url.Parse(u)
	require.NoError(t, err)
	p.Host = addr
	return p.String()
}

// urlHost is the host:port of the PostgreSQL URL u.
func urlHost(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	require.NoError(t, err)
	return p.Host
}

// forward listens on addr until the test ends and copies every connection
// to and from a connection to target: PostgreSQL reachable at addr from
// now on.
func forward(t *testing.T, addr, target string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return // closed
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				go func() {
					_, _ = io.Copy(s, c)
					_ = s.Close()
				}()
				_, _ = io.Copy(c, s)
			}()
		}
	}()
}
