package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

const policyUsage = `usage: console policy <command> [flags]

commands:
  rollback  let a replaced replay policy version be made active again by
            the next process that starts with its file (audited)
`

// runPolicy dispatches the "console policy" commands.
func runPolicy(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "rollback" {
		return runPolicyRollback(ctx, args[1:], getenv, stdout, stderr)
	}
	fmt.Fprint(stderr, policyUsage)
	return errUsage
}

// runPolicyRollback is "console policy rollback --to VERSION --reason
// TEXT": a replaced replay policy version is never made active again by a
// process that restarts with its file (an older rollout coming back); this
// is the deliberate act that lets the next start with that file activate
// it. The audit row names the operator as the operating system knows them.
func runPolicyRollback(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var dsn, version, reason string
	s := newSettings("policy rollback", getenv, stderr)
	s.str(&dsn, "database-url", "DATABASE_URL", "", "PostgreSQL connection string (the runtime role may do it)", checkPostgresURL)
	s.str(&version, "to", "POLICY_ROLLBACK_TO", "", "the replaced version to go back to: its start (at least 8 characters, as the Policy page shows it) or all of it", checkRequired)
	s.str(&reason, "reason", "POLICY_ROLLBACK_REASON", "", "why, as recorded in the audit log", checkRequired)
	if err := s.parse(args); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer conn.Close(context.Background())
	v, err := replay.AllowPolicyRollback(ctx, conn, version, operator(), reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "replay policy %s (%s) may be made active again: start a console or worker whose POLICY_FILE has it (the version it replaces is then replaced in turn)\n",
		v.Version, v.File)
	return nil
}

// operator is who runs a command, for its audit row: the operating
// system's user at this host.
func operator() quarantine.Actor {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return quarantine.Actor{Issuer: "console-cli", Subject: name + "@" + host}
}
