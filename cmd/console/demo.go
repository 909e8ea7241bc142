package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/dlqdemo"
)

// runDemo is "console demo": demo traffic through real failing consumers,
// on streams and consumers it makes and marks (dlqdemo.Run refuses those of
// its names it did not make), or with --rows a fill of a database without
// dead letters of its own (runFill).
func runDemo(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var natsURL, tokenFile, prefix, tenants, level, dbURL, revalidate string
	var ratePerSec, count, rows int
	var takeOver bool
	s := newSettings("demo", getenv, stderr)
	s.str(&natsURL, "nats-url", "NATS_URL", "nats://127.0.0.1:4222", "NATS server of the demo's own: it makes streams "+dlqdemo.WatchList()+
		" (and refuses ones it did not make), and a console on it stores the demo's dead letters as real ones", checkNATSURL)
	s.str(&tokenFile, "nats-token-file", "NATS_TOKEN_FILE", "", "file holding the NATS auth token (the embedded server's, under make run)", nil)
	s.str(&prefix, "dlq-prefix", "DLQ_SUBJECT_PREFIX", dlq.DefaultSubjectPrefix, "subject prefix of the demo's (fake) dead letters", checkToken)
	s.str(&tenants, "tenants", "DEMO_TENANTS", "acme,globex", "comma-separated tenants", nil)
	s.boolean(&takeOver, "take-over-unmarked", "DEMO_TAKE_OVER_UNMARKED",
		"set up streams and consumers of the demo's names that carry no quarantine-demo mark as the demo's, marking them, instead of refusing them: "+
			"only on a NATS server of the demo's own whose store an older demo made (make run passes it for its embedded server)")
	s.integer(&ratePerSec, "rate", "DEMO_RATE", 20, "messages published per second", 1, 100000)
	s.integer(&count, "count", "DEMO_COUNT", 0, "messages to publish; 0 runs until stopped", 0, 100000000)
	s.str(&level, "log-level", "LOG_LEVEL", "info", "debug, info, warn or error", checkLogLevel)
	s.integer(&rows, "rows", "DEMO_ROWS", 0, "instead of traffic, write this many fake dead letters straight into PostgreSQL (COPY) and exit; "+
		"refused on a database holding dead letters it did not write", 0, dlqdemo.MaxFillRows)
	s.str(&dbURL, "database-url", "MIGRATE_DATABASE_URL", "", "PostgreSQL connection string of the schema's owner (for --rows: it migrates, and drops and rebuilds indexes)", nil)
	// Not REVALIDATE_SUBJECT: in the console's environment that names the
	// deploy's real revalidation service, and a demo answering it would
	// be a second responder saying allow for its own principals.
	s.str(&revalidate, "revalidate-subject", "DEMO_REVALIDATE_SUBJECT", "", "answer revalidation requests on this subject from the demo's principal list, "+
		"for a development console whose REVALIDATE_SUBJECT it is (empty: do not)", checkRevalidateSubject)
	if err := s.parse(args); err != nil {
		return err
	}
	log := newLogger(stderr, level, "text")
	if rows > 0 {
		return runFill(ctx, dbURL, rows, tenants, log, stdout)
	}
	nc, js, err := app.DialNATS(natsURL, tokenFile, "quarantine-demo")
	if err != nil {
		return err
	}
	defer nc.Close()
	if revalidate != "" {
		sub, err := dlqdemo.ServeRevalidation(nc, revalidate, log)
		if err != nil {
			return err
		}
		defer func() { _ = sub.Unsubscribe() }()
		fmt.Fprintf(stdout, "demo: answering revalidation requests on %s (user:0 to user:%d hold accounts:grant)\n", revalidate, dlqdemo.GrantHolders-1)
	}
	stats, err := dlqdemo.Run(ctx, js, dlqdemo.Config{
		Prefix: prefix, Tenants: strings.Split(tenants, ","), Rate: float64(ratePerSec), Count: count, Log: log,
		TakeOverUnmarked: takeOver,
		Ready: func() {
			fmt.Fprintf(stdout, "demo: publishing %d msg/s for tenants %s on streams %s\n", ratePerSec, tenants, dlqdemo.WatchList())
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "demo:", stats)
	return nil
}

// runFill is demo --rows: refuse a database holding dead letters a fill did
// not write (dlqdemo.CheckFillable), migrate, then fill dead_letters with
// COPY, as the owner of the schema (the load drops and rebuilds indexes and
// analyses).
func runFill(ctx context.Context, dbURL string, rows int, tenants string, log *slog.Logger, stdout io.Writer) error {
	if err := checkPostgresURL(dbURL); err != nil {
		return fmt.Errorf("MIGRATE_DATABASE_URL (--database-url) is needed with --rows: %w", err)
	}
	pool, err := app.OpenPool(ctx, dbURL, 10*time.Second, app.PoolConfig{Name: "demo"}, log)
	if err != nil {
		return err
	}
	defer pool.Close()
	// Before migrating: a database of real dead letters is left as it was.
	if err := dlqdemo.CheckFillable(ctx, pool); err != nil {
		return fmt.Errorf("MIGRATE_DATABASE_URL (--database-url): %w", err)
	}
	if _, err := app.MigrateAsOwner(ctx, dbURL); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "demo: writing %d dead letters for tenants %s\n", rows, tenants)
	st, err := dlqdemo.Fill(ctx, pool, dlqdemo.FillConfig{Rows: rows, Tenants: strings.Split(tenants, ","), Log: log})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "demo: wrote %d dead letters in %s (%.0f rows/s)\n", st.Rows, st.Elapsed.Round(time.Millisecond), float64(st.Rows)/st.Elapsed.Seconds())
	return nil
}
