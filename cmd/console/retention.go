package main

import (
	"context"
	"fmt"
	"io"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
)

const retentionUsage = `usage: console retention <command> [flags]

commands:
  forget-stream  remove the source keys retention kept of the dead letters of
                 a stream gone for good: refused unless the console's NATS
                 server says the stream does not exist; in batches, each
                 audited (retention.trim_keys, with --reason) and recorded, so
                 that a message of the stream stored again (a restore from a
                 backup) is flagged after_retention_key_trim and never
                 replayed
`

// runRetention dispatches the "console retention" commands.
func runRetention(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "retention", retentionUsage, map[string]command{"forget-stream": runRetentionForgetStream}, args, getenv, stdout, stderr)
}

// runRetentionForgetStream is "console retention forget-stream --stream
// NAME --reason TEXT": the keeper keeps the keys of a stream that does not
// exist, since a restore would bring its messages back; this is the
// deliberate act that lets them go once the stream is gone for good
// (dlq.ForgetStream). It connects to NATS as the console does (NATS_URL,
// NATS_TOKEN_FILE) and refuses unless the stream does not exist there;
// a server it cannot reach keeps every key. The audit rows name the
// operator as the operating system knows them.
func runRetentionForgetStream(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var dsn, natsURL, tokenFile, stream, reason string
	var batch int
	s := newSettings("retention forget-stream", getenv, stderr)
	s.str(&dsn, "database-url", "DATABASE_URL", "", "PostgreSQL connection string (the runtime role may do it)", checkPostgresURL)
	s.str(&natsURL, "nats-url", "NATS_URL", "", "the NATS server URLs the console uses (with the embedded server: nats://<NATS_EMBEDDED_ADDR>)", func(v string) error {
		if v == "" {
			return fmt.Errorf("is required: the stream must be looked up on the console's NATS server")
		}
		return checkNATSURL(v)
	})
	s.str(&tokenFile, "nats-token-file", "NATS_TOKEN_FILE", "", "file holding the NATS auth token", checkFile)
	s.str(&stream, "stream", "RETENTION_FORGET_STREAM", "", "the stream gone for good whose kept keys go", checkStreamName)
	s.str(&reason, "reason", "RETENTION_FORGET_REASON", "", "why, as recorded in the audit log", checkRequired)
	s.integer(&batch, "retention-batch", "RETENTION_BATCH", 10_000, "keys one run removes at most (one transaction, one audit row; at most 10,000 whatever the setting)", 100, 1_000_000)
	if err := s.parse(args); err != nil {
		return err
	}
	nc, js, err := app.DialNATS(natsURL, tokenFile, "quarantine-retention-forget-stream")
	if err != nil {
		return fmt.Errorf("the keys of stream %s are kept: %w", stream, err)
	}
	defer nc.Close()
	conn, err := app.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer conn.Close(context.Background())
	runs, err := dlq.ForgetStream(ctx, conn, js, stream, operator(), reason, batch)
	var keys int64
	for _, r := range runs {
		keys += r.Keys
		fmt.Fprintf(stdout, "removed %d kept source keys of stream %s, sequences %d to %d (audited: %s)\n", r.Keys, stream, r.FromSeq, r.ToSeq, dlq.ActionTrimKeys)
	}
	switch {
	case err != nil && keys > 0:
		return fmt.Errorf("removed %d kept source keys of stream %s, then stopped: %w", keys, stream, err)
	case err != nil:
		return err
	case keys == 0:
		fmt.Fprintf(stdout, "stream %s does not exist and has no kept source keys: nothing removed\n", stream)
	default:
		fmt.Fprintf(stdout, "stream %s does not exist: removed %d kept source keys in %d runs; a message of it stored again is flagged %s and left out of replays\n",
			stream, keys, len(runs), dlq.FlagAfterKeyTrim)
	}
	return nil
}
