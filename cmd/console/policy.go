package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

const policyUsage = `usage: console policy <command> [flags]

commands:
  status    the active replay policy version and retention terms, and the
            last rollback allowance of each: waiting (until when), used,
            ended or expired
  show      what a replay policy or retention terms version says, as the
            database recorded it when it was activated: "show" the active
            ones, "show VERSION" the one VERSION names (its start, at least
            8 characters, or all of it); "show VERSION --canonical" prints
            exactly the text whose SHA-256 is VERSION (--canonical needs
            VERSION: "policy status" names the active ones)
  rollback  let a replaced replay policy or retention terms version be made
            active again by the next process that starts with its file, within --for
            (default 1h; audited)
`

// runPolicy dispatches the "console policy" commands.
func runPolicy(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "policy", policyUsage, map[string]command{
		"rollback": runPolicyRollback, "status": runPolicyStatus, "show": runPolicyShow,
	}, args, getenv, stdout, stderr)
}

// runPolicyRollback is "console policy rollback --to VERSION --reason TEXT
// [--for DURATION]": a replaced replay policy version is never made active
// again by a process that restarts with its file (an older rollout coming
// back); this is the deliberate act that lets the first start with that
// file within DURATION activate it, once. The audit row names the
// operator as the operating system knows them.
func runPolicyRollback(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var dsn, version, reason string
	var d time.Duration
	s := newSettings("policy rollback", getenv, stderr)
	s.str(&dsn, "database-url", "DATABASE_URL", "", "PostgreSQL connection string (the runtime role may do it)", checkPostgresURL)
	s.str(&version, "to", "POLICY_ROLLBACK_TO", "", "the replaced version to go back to: its start (at least 8 characters, as the Policy page shows it) or all of it", checkRequired)
	s.str(&reason, "reason", "POLICY_ROLLBACK_REASON", "", "why, as recorded in the audit log", checkRequired)
	s.duration(&d, "for", "POLICY_ROLLBACK_FOR", replay.DefaultRollbackFor,
		"how long the allowance waits for a start with the version's file; unused, it expires", replay.MinRollbackFor, replay.MaxRollbackFor)
	if err := s.parse(args); err != nil {
		return err
	}
	conn, err := app.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer conn.Close(context.Background())
	r, err := replay.AllowPolicyRollback(ctx, conn, version, d, operator(), reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s (%s) may be made active again until %s: start a console or worker whose POLICY_FILE has it "+
		"(the version it replaces is then replaced in turn); unused by then, the allowance expires\n",
		r.Kind(), r.Version, r.File, r.ExpiresAt.UTC().Format(time.RFC3339))
	return nil
}

// runPolicyStatus is "console policy status": the active replay policy
// version, and the last rollback allowance and what became of it.
func runPolicyStatus(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var dsn string
	s := newSettings("policy status", getenv, stderr)
	s.str(&dsn, "database-url", "DATABASE_URL", "", "PostgreSQL connection string (the runtime role may do it)", checkPostgresURL)
	if err := s.parse(args); err != nil {
		return err
	}
	conn, err := app.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer conn.Close(context.Background())
	active, r, err := replay.PolicyStatus(ctx, conn)
	if err != nil {
		return err
	}
	terms, tr, err := replay.RetentionStatus(ctx, conn)
	if err != nil {
		return err
	}
	if active.Version == "" {
		fmt.Fprintln(stdout, "active: none recorded yet (the first console or worker to start activates its file's version)")
	} else {
		fmt.Fprintf(stdout, "active: %s (%s), since %s, activated by %s\n", active.Version, active.File, rfc3339(active.ActivatedAt), active.ActivatedBy)
	}
	printRollback(stdout, "rollback", r)
	if terms.Version == "" {
		fmt.Fprintln(stdout, "retention terms: none recorded yet (every console removes dead letters by its own file's terms until one is)")
	} else {
		fmt.Fprintf(stdout, "retention terms: %s (%s), since %s, activated by %s\n", terms.Version, terms.File, rfc3339(terms.ActivatedAt), terms.ActivatedBy)
	}
	printRollback(stdout, "retention terms rollback", tr)
	return nil
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// printRollback writes the line of "console policy status" that says what
// became of the last rollback allowance r (nil: none was made).
func printRollback(w io.Writer, label string, r *replay.PolicyRollback) {
	at := rfc3339
	switch {
	case r == nil:
		fmt.Fprintf(w, "%s: none allowed\n", label)
	case r.Pending():
		fmt.Fprintf(w, "%s: to %s (%s) allowed by %s at %s, waiting until %s for a start with its file (audit entry %d)\n",
			label, r.Version, r.File, r.AllowedBy, at(r.AllowedAt), at(r.ExpiresAt), r.AuditSeq)
	case r.Used:
		fmt.Fprintf(w, "%s: to %s allowed by %s at %s, used at %s by %s (audit entry %d)\n",
			label, r.Version, r.AllowedBy, at(r.AllowedAt), at(*r.EndedAt), r.EndedBy, r.AuditSeq)
	case r.EndedAt != nil:
		fmt.Fprintf(w, "%s: to %s allowed by %s at %s, ended unused at %s when %s activated another version (audit entry %d)\n",
			label, r.Version, r.AllowedBy, at(r.AllowedAt), at(*r.EndedAt), r.EndedBy, r.AuditSeq)
	default:
		fmt.Fprintf(w, "%s: to %s allowed by %s at %s, expired unused at %s (audit entry %d)\n",
			label, r.Version, r.AllowedBy, at(r.AllowedAt), at(r.ExpiresAt), r.AuditSeq)
	}
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
