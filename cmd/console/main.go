// Command console is the Quarantine operator console for dead-lettered
// NATS JetStream messages. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// The first Ctrl-C or SIGTERM asks for an orderly stop; once it came,
	// the signals go back to Go's default, so a second one ends the
	// process at once (a stop that hangs can still be forced).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr, os.Environ()...)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "console:", audit.Printable(app.Redact(err.Error())))
		os.Exit(exitCode(err))
	}
}

const usage = `usage: console <command> [flags]

commands:
  serve     HTTP console, ingester and replay workers
  worker    replay workers only (scale them apart from serve)
  migrate   apply database migrations and exit
  demo      publish demo traffic through real failing consumers
  audit     "audit verify", "audit checkpoint", "audit keygen": the audit log's chain and its signed checkpoints
  policy    "policy status": the replay policy and retention terms in force; "policy show [VERSION]": what a
            version says, as recorded; "policy rollback": let a replaced version be made active again
  retention "retention forget-stream": remove the kept source keys of a stream gone for good (audited)
  version   print the version

Run "console <command> -h" for the flags of a command. Every flag can also
be set with the environment variable named in its help.
`

// run is the whole program; main only adds signals and the exit code.
// environ is the process's environment (os.Environ), for the names of the
// variables set: a command that takes settings first warns of each set
// under the console's prefixes that no setting reads
// (warnUnknownSettings). Left out (tests), none is looked for.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, environ ...string) error {
	if len(args) > 1 && slices.ContainsFunc(commandsWithSettings, func(c []string) bool { return c[0] == args[1] }) {
		warnUnknownSettings(ctx, environ, getenv, stderr)
	}
	err := runCommand(ctx, args, getenv, stdout, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil // "-h": the usage asked for is printed, nothing failed (as flag.ExitOnError does)
	case errors.Is(err, app.ErrStopped):
		return nil // stopped while it waited at start: the stop was asked for, nothing failed
	}
	return err
}

// runCommand runs the command args names.
func runCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	cmd, rest := args[1], args[2:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, getenv, stdout, stderr)
	case "demo":
		return runDemo(ctx, rest, getenv, stdout, stderr)
	case "worker":
		return runWorker(ctx, rest, getenv, stdout, stderr)
	case "audit":
		return runAudit(ctx, rest, getenv, stdout, stderr)
	case "policy":
		return runPolicy(ctx, rest, getenv, stdout, stderr)
	case "retention":
		return runRetention(ctx, rest, getenv, stdout, stderr)
	case "version":
		if len(rest) == 1 && slices.Contains([]string{"-h", "-help", "--help"}, rest[0]) {
			fmt.Fprint(stdout, usage)
			return nil
		}
		if len(rest) > 0 { // it takes no flag and no argument
			fmt.Fprint(stderr, usage)
			return usageError(fmt.Errorf("version takes no arguments, got %q", rest))
		}
		fmt.Fprintln(stdout, "console", version)
		return nil
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return usageError(fmt.Errorf("unknown command %q", cmd))
	}
}
