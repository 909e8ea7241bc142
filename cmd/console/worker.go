package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// replay binds the replay settings, the same in serve and in worker, but
// for REPLAY_WORKERS's default and whether 0 is taken: serve takes it
// (its replays are run by console worker processes), a worker does not
// (separate), since running replay workers is all it is for.
//
// A separate worker has no default POLICY_FILE: serve's default is the
// development table that `make run` uses, and a worker of a deploy that
// silently took it would execute no replay (its version is not the one in
// force, see docs/replay.md) or, worse, activate it where no console had
// started yet.
func (s *settings) replay(c *app.ReplayConfig, defaultWorkers int, policyDefault string, separate bool) {
	policyCheck := checkRequired
	if policyDefault == "" {
		policyCheck = func(v string) error {
			if strings.TrimSpace(v) == "" {
				return errors.New("is required for a separate worker: the replay policy table of your deploy, the same file as the console's (docs/replay.md)")
			}
			return nil
		}
	}
	s.str(&c.PolicyFile, "policy-file", "POLICY_FILE", policyDefault, "replay policy table (TOML)", policyCheck)
	if separate {
		// serve declares it among its own settings (app.New passes it on).
		s.str(&c.DLQPrefix, "dlq-prefix", "DLQ_SUBJECT_PREFIX", dlq.DefaultSubjectPrefix, "subject prefix of dead letters, as the console's: replays never publish under it", checkToken)
		s.integer(&c.Workers, "replay-workers", "REPLAY_WORKERS", defaultWorkers, "replay workers in this process", 0, 64)
		// Checked once it was read (checks run in order).
		s.checks = append(s.checks, func() error { return checkWorkerCount(c.Workers) })
	} else {
		s.integer(&c.Workers, "replay-workers", "REPLAY_WORKERS", defaultWorkers, "replay workers in this process (0: none)", 0, 64)
	}
	var allow string
	s.str(&allow, "replay-subject-allow", "REPLAY_SUBJECT_ALLOW", "", "subject patterns each tenant's replays may publish to, comma-separated: "+
		"app.{tenant}.> for every tenant, acme=billing.acme.> for one (empty: no replay at all; $JS, $SYS, _INBOX never)", func(v string) error {
		var err error
		c.Subjects, err = replay.ParseSubjectAllowlist(v)
		return err
	})
	s.str(&c.RevalidateSubject, "revalidate-subject", "REVALIDATE_SUBJECT", "", "NATS subject that answers revalidation requests for revalidate items (empty: they are blocked)", checkRevalidateSubject)
	s.duration(&c.RevalidateTimeout, "revalidate-timeout", "REVALIDATE_TIMEOUT", 2*time.Second, "wait for a revalidation answer", 10*time.Millisecond, time.Minute)
	s.duration(&c.Lease, "replay-lease", "REPLAY_LEASE", 30*time.Second, "how long a worker holds a claimed job", time.Second, 10*time.Minute)
	s.duration(&c.DraftTTL, "replay-draft-ttl", "REPLAY_DRAFT_TTL", replay.DefaultDraftTTL, "how long a frozen selection may wait for its submit", time.Minute, 7*24*time.Hour)
	s.duration(&c.WindowMargin, "replay-window-margin", "REPLAY_WINDOW_MARGIN", replay.DefaultWindowMargin,
		"added to every target stream's duplicate window before a replay publishes (the clocks of broker, database and producers)", time.Millisecond, 10*time.Minute)
	s.size(&c.MaxPayload, "replay-max-payload", "REPLAY_MAX_PAYLOAD", "0", "largest replay message, headers included, like 512KiB, when lower than "+
		"the NATS server's max_payload (an account or user limit below it; 0: the server's)", 1<<10)
	// Checked after both durations were read (checks run in order).
	s.checks = append(s.checks, func() error { return checkRevalidateTimeout(c.RevalidateTimeout, c.Lease) })
}

// checkWorkerCount refuses REPLAY_WORKERS=0 for console worker: such a
// process would start, pass /readyz and replay nothing, which only
// ReplayNotProgressing would tell, a quarter of an hour later. 0 is
// serve's setting when worker processes replay instead; an environment
// both share must set it for serve alone.
func checkWorkerCount(n int) error {
	if n > 0 {
		return nil
	}
	return errors.New("REPLAY_WORKERS (--replay-workers) 0: console worker runs replay workers and nothing else, so it needs 1 to 64 " +
		"(it runs 4 when REPLAY_WORKERS is not set); 0 is serve's setting when console worker processes replay instead: set it for serve alone")
}

// checkRevalidateSubject refuses a REVALIDATE_SUBJECT no request can be
// sent to (a wildcard, an empty token, white space): taken as configured,
// it would have every revalidate item fail its revalidation at replay time.
func checkRevalidateSubject(v string) error {
	if v == "" {
		return nil
	}
	if err := dlq.ValidatePublishSubject(v); err != nil {
		return fmt.Errorf("must be a subject a request can be sent to, like iam.revalidate: %w", err)
	}
	return nil
}

// checkRevalidateTimeout refuses a REVALIDATE_TIMEOUT that is not shorter
// than two thirds of REPLAY_LEASE: a worker judges and publishes what it
// claimed within two thirds of its lease and releases the rest for the
// next claim (dlq/replay Worker.RunOnce), so a service answering later
// than that, though within its timeout, would have its items released on
// every claim, forever.
func checkRevalidateTimeout(timeout, lease time.Duration) error {
	if budget := lease * 2 / 3; timeout >= budget {
		return fmt.Errorf("REVALIDATE_TIMEOUT (--revalidate-timeout) %s must be shorter than two thirds of REPLAY_LEASE (--replay-lease) %s: "+
			"a worker judges and publishes what it claimed within %s and releases the rest, so items waiting longer for their revalidation "+
			"would be released on every claim; raise REPLAY_LEASE above %s or lower REVALIDATE_TIMEOUT",
			timeout, lease, budget, (timeout * 3 / 2).Round(time.Millisecond))
	}
	return nil
}

// runWorker is "console worker": replay workers only, for scaling them
// apart from the HTTP console.
func runWorker(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var level, format, metricsTokenFile string
	var cfg app.WorkersConfig
	s := newSettings("worker", getenv, stderr)
	s.str(&cfg.DatabaseURL, "database-url", "DATABASE_URL", "", "PostgreSQL connection string of the runtime role", checkPostgresURL)
	s.duration(&cfg.DBWait, "db-wait", "DATABASE_WAIT", 30*time.Second, "how long to wait for PostgreSQL at start", 0, 10*time.Minute)
	s.duration(&cfg.NATSWait, "nats-wait", "NATS_WAIT", time.Minute, "how long to wait at start for NATS to take a connection", time.Second, 10*time.Minute)
	s.duration(&cfg.StatementTimeout, "db-worker-statement-timeout", "DATABASE_WORKER_STATEMENT_TIMEOUT", time.Minute, "longest statement of a replay worker", 100*time.Millisecond, time.Hour)
	s.str(&cfg.NATSTokenFile, "nats-token-file", "NATS_TOKEN_FILE", "", "file holding the NATS auth token", checkFile)
	s.str(&cfg.NATSURL, "nats-url", "NATS_URL", "", "NATS server URLs", func(v string) error {
		if v == "" {
			return fmt.Errorf("is required for a separate worker")
		}
		return checkNATSURL(v)
	})
	s.replay(&cfg.Replay, 4, "", true)
	s.groups(&cfg.Replay.Groups)
	s.duration(&cfg.Replay.DirectoryMaxAge, "session-lifetime", "SESSION_LIFETIME", 12*time.Hour,
		"the console's session lifetime: groups read from the identity provider longer ago give no right to a replay", time.Minute, 30*24*time.Hour)
	s.str(&cfg.MetricsAddr, "metrics-addr", "METRICS_ADDR", "127.0.0.1:9465",
		"listen address of /healthz, /readyz and /metrics (\"off\": none); keep it loopback or internal", checkMetricsAddr)
	s.str(&metricsTokenFile, "metrics-token-file", "METRICS_TOKEN_FILE", "", "file holding a bearer token: /metrics then needs it (the probes do not)", checkFile)
	s.str(&level, "log-level", "LOG_LEVEL", "info", "debug, info, warn or error", checkLogLevel)
	s.str(&format, "log-format", "LOG_FORMAT", "text", "text or json", checkOneOf("text", "json"))
	if err := s.parse(args); err != nil {
		return err
	}
	var err error
	if cfg.MetricsToken, err = app.ReadSecret(metricsTokenFile); err != nil {
		return fmt.Errorf("METRICS_TOKEN_FILE (--metrics-token-file): %w", err)
	}
	// NewWorkers waits for PostgreSQL and NATS up to DATABASE_WAIT and
	// NATS_WAIT, answering /healthz meanwhile on METRICS_ADDR.
	w, err := app.NewWorkers(ctx, cfg, newLogger(stderr, level, format))
	if err != nil {
		return err
	}
	defer w.Close()
	if addr := w.Addr(); addr != "" {
		fmt.Fprintf(stdout, "console worker: %d replay workers; /healthz, /readyz and /metrics on http://%s\n", w.Count(), addr)
	} else {
		fmt.Fprintf(stdout, "console worker: %d replay workers\n", w.Count())
	}
	return w.Run(ctx)
}
