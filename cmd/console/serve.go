package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
)

// serveConfig is what `console serve` is told: the console's settings,
// where its secrets are, and how to log.
type serveConfig struct {
	app.Config
	AuditKeyFile        string
	AuditPublicKeyFiles string
	MetricsTokenFile    string
	LogLevel            string
	LogFormat           string
}

func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	c := serveConfig{Config: app.Config{Version: version}}
	var watch string
	s := newSettings("serve", getenv, stderr)
	s.str(&c.Addr, "addr", "CONSOLE_ADDR", "127.0.0.1:8080", "HTTP listen address", checkAddr)
	s.str(&c.DatabaseURL, "database-url", "DATABASE_URL", "", "PostgreSQL connection string of the runtime role (a member of quarantine_runtime, not the schema's owner)", checkPostgresURL)
	s.str(&c.NATSURL, "nats-url", "NATS_URL", "", "NATS server URLs; empty starts an embedded server", checkNATSURL)
	s.str(&c.NATSEmbeddedAddr, "nats-embedded-addr", "NATS_EMBEDDED_ADDR", "127.0.0.1:4222", "listen address of the embedded NATS server (loopback only)", checkEmbeddedAddr)
	s.str(&c.NATSEmbeddedDir, "nats-embedded-dir", "NATS_EMBEDDED_DIR", ".data/nats", "JetStream storage of the embedded NATS server", nil)
	s.str(&c.NATSTokenFile, "nats-token-file", "NATS_TOKEN_FILE", "", "file holding the NATS auth token; the embedded server creates it (0600) when missing", nil)
	s.str(&c.Prefix, "dlq-prefix", "DLQ_SUBJECT_PREFIX", dlq.DefaultSubjectPrefix, "subject prefix of dead letters: <prefix>.<tenant>.<item_type>", checkToken)
	s.str(&c.Stream, "dlq-stream", "DLQ_STREAM", "DLQ", "JetStream stream holding dead letters", checkStreamName)
	s.str(&watch, "watch-streams", "DLQ_WATCH_STREAMS", "", "streams whose MAX_DELIVERIES/MSG_TERMINATED advisories are captured: STREAM[:template],...", func(v string) error {
		var err error
		c.Watch, err = dlq.ParseWatchStreams(v)
		return err
	})
	s.boolean(&c.AdvisoriesTrusted, "advisories-trusted", "DLQ_ADVISORIES_TRUSTED", "no client of the NATS account may publish on $JS.EVENT.ADVISORY.>: give-ups captured from advisories may be replayed (else they are stored flagged advisory_unverified)")
	s.integer(&c.Replicas, "replicas", "DLQ_REPLICAS", 1, "replicas of the streams the console creates (1 with the embedded server; at most the servers of the NATS cluster)", 1, 5)
	s.integer(&c.BatchSize, "ingest-batch", "INGEST_BATCH_SIZE", 1000, "dead letters per insert", 1, 10000)
	s.integer(&c.IngestWorkers, "ingest-workers", "INGEST_WORKERS", 2, "concurrent insert workers", 1, 64)
	s.duration(&c.BatchWait, "ingest-wait", "INGEST_MAX_WAIT", 50*time.Millisecond, "longest a dead letter waits for its batch", time.Millisecond, 10*time.Second)
	s.duration(&c.AckWait, "ingest-ack-wait", "INGEST_ACK_WAIT", time.Minute, "redelivery of dead letters a stopped ingester did not ack", time.Second, time.Hour)
	s.duration(&c.StallAfter, "ingest-stall-after", "INGEST_STALL_AFTER", 2*time.Minute, "the dashboard calls ingest stalled when dead letters wait this long with none stored (readiness does not fail on it); 0 turns that off", 0, 24*time.Hour)
	s.duration(&c.StreamMaxAge, "dlq-max-age", "DLQ_MAX_AGE", 0, "age limit of the DLQ stream, like 720h: JetStream discards older messages, stored or not (0: none, or the existing stream's; else at least 15m, for DeadLetterStreamNearLimit to warn first, and 4 × INGEST_ACK_WAIT, for a killed replica's batch to be delivered again first)", 0, 10*365*24*time.Hour)
	s.size(&c.StreamMaxBytes, "dlq-max-bytes", "DLQ_MAX_BYTES", "0", "size limit of the DLQ stream, like 10GiB: JetStream discards the oldest messages past it, stored or not (0: none, or the existing stream's; "+
		"at start also at least twice the NATS server's max_payload)", 1<<20)
	s.integer(&c.Keeper.Ahead, "partitions-ahead", "PARTITIONS_AHEAD", 7, "days after today that get a partition of dead_letters before they come", 1, 90)
	s.duration(&c.Keeper.Every, "retention-every", "RETENTION_EVERY", 10*time.Minute, "how often partitions are made ahead and retention removes what the policy no longer keeps", time.Minute, 24*time.Hour)
	s.integer(&c.Keeper.BatchRows, "retention-batch", "RETENTION_BATCH", 10_000, "dead letters one retention run deletes at most (one transaction, one audit row)", 100, 1_000_000)
	s.duration(&c.DBWait, "db-wait", "DATABASE_WAIT", 30*time.Second, "how long to wait for PostgreSQL at start", 0, 10*time.Minute)
	s.duration(&c.ShutdownDrain, "shutdown-drain", "SHUTDOWN_DRAIN", 5*time.Second, "once asked to stop, how long /readyz answers 503 while pages are still served, "+
		"before the listener closes (longer than the load balancer's readiness probe takes to drop a replica; 0: none)", 0, 5*time.Minute)
	s.duration(&c.NATSWait, "nats-wait", "NATS_WAIT", time.Minute, "how long to wait at start for JetStream to answer (a cluster electing its leaders)", time.Second, 10*time.Minute)
	s.duration(&c.StatementTimeout, "db-statement-timeout", "DATABASE_STATEMENT_TIMEOUT", 15*time.Second, "longest statement of a web request (exports get 5m)", 100*time.Millisecond, time.Hour)
	s.duration(&c.WorkerStatementTimeout, "db-worker-statement-timeout", "DATABASE_WORKER_STATEMENT_TIMEOUT", time.Minute, "longest statement of ingest, replay workers and checkpoints", 100*time.Millisecond, time.Hour)
	s.str(&c.LogLevel, "log-level", "LOG_LEVEL", "info", "debug, info, warn or error", checkLogLevel)
	s.str(&c.LogFormat, "log-format", "LOG_FORMAT", "text", "text or json", checkOneOf("text", "json"))
	s.str(&c.PublicURL, "public-url", "CONSOLE_PUBLIC_URL", "", "URL people use to reach the console; default http://<addr>; https makes cookies Secure and sends HSTS", checkPublicURL)
	s.boolean(&c.TLSTerminated, "tls-terminated", "TLS_TERMINATED", "TLS ends in front of the console (a proxy or load balancer): cookies are Secure and HSTS is sent")
	var proxies string
	s.str(&proxies, "trusted-proxies", "TRUSTED_PROXIES", "", "CIDRs of proxies whose X-Forwarded-For names the client (empty: the TCP peer is the client)", func(v string) error {
		var err error
		c.TrustedProxies, err = parseCIDRs(v)
		return err
	})
	s.str(&c.MetricsAddr, "metrics-addr", "METRICS_ADDR", "127.0.0.1:9464", "listen address of /metrics (\"off\": none); keep it loopback or internal", checkMetricsAddr)
	s.str(&c.MetricsTokenFile, "metrics-token-file", "METRICS_TOKEN_FILE", "", "file holding a bearer token: /metrics then needs it, and is also served on --addr", checkFile)
	s.str(&c.OIDC.Issuer, "oidc-issuer", "OIDC_ISSUER", "", "OpenID Connect issuer URL of the identity provider", checkRequiredHTTPURL)
	s.str(&c.OIDC.ClientID, "oidc-client-id", "OIDC_CLIENT_ID", "", "client id registered at the identity provider", checkRequired)
	s.str(&c.OIDC.ClientSecret, "oidc-client-secret", "OIDC_CLIENT_SECRET", "", "client secret", nil)
	s.str(&c.OIDC.RedirectURL, "oidc-redirect-url", "OIDC_REDIRECT_URL", "", "callback URL registered at the provider; default <public url>/auth/callback", checkOptionalHTTPURL)
	s.str(&c.OIDC.GroupsClaim, "oidc-groups-claim", "OIDC_GROUPS_CLAIM", "groups", "ID token claim holding the user's groups", checkRequired)
	s.duration(&c.OIDCWait, "oidc-wait", "OIDC_WAIT", 30*time.Second, "how long to wait for the identity provider at start", 0, 10*time.Minute)
	s.duration(&c.IdleTimeout, "session-idle-timeout", "SESSION_IDLE_TIMEOUT", time.Hour, "sign out after this long without a request", time.Minute, 7*24*time.Hour)
	s.duration(&c.Lifetime, "session-lifetime", "SESSION_LIFETIME", 12*time.Hour, "sign out this long after sign-in", time.Minute, 30*24*time.Hour)
	s.duration(&c.OIDC.RefreshInterval, "session-refresh-interval", "SESSION_REFRESH_INTERVAL", 10*time.Minute, "read a session's groups again from the provider this often (the session ends if it refuses)", time.Minute, 24*time.Hour)
	s.integer(&c.OIDC.ExchangeBurst, "signin-burst", "SIGNIN_BURST", 50, "sign-ins one client address (TRUSTED_PROXIES decides what that is) may finish at once, then two a second", 1, 100000)
	s.groups(&c.Groups)
	s.str(&c.AuditKeyFile, "audit-signing-key", "AUDIT_SIGNING_KEY_FILE", "", "PEM file of the Ed25519 key that signs audit checkpoints (make one with: console audit keygen --out FILE)", checkSigningKey)
	s.str(&c.AuditPublicKeyFiles, "audit-public-keys", "AUDIT_PUBLIC_KEYS", "", "PEM files of earlier signing keys' public keys, comma-separated: the audit page's chain check trusts them too", nil)
	var every int
	s.integer(&every, "audit-checkpoint-every", "AUDIT_CHECKPOINT_EVERY", 1000, "sign the audit chain's head after this many entries", 1, 10_000_000)
	s.duration(&c.CheckpointInterval, "audit-checkpoint-interval", "AUDIT_CHECKPOINT_INTERVAL", 5*time.Minute, "longest time new audit entries stay unsigned", time.Second, 24*time.Hour)
	s.replay(&c.Replay, 2, devPolicyFile, false)
	if err := s.parse(args); err != nil {
		return c, err
	}
	c.CheckpointEvery = int64(every)
	c.Replay.Groups = c.Groups
	c.PublicURL = app.PublicURLOf(c.PublicURL)
	if c.AckWait <= c.BatchWait {
		return c, fmt.Errorf("INGEST_ACK_WAIT (--ingest-ack-wait) %s must be longer than INGEST_MAX_WAIT (--ingest-wait) %s: "+
			"JetStream would deliver a dead letter again while it still waits for its batch", c.AckWait, c.BatchWait)
	}
	if c.NATSURL == "" && c.Replicas > 1 {
		return c, fmt.Errorf("DLQ_REPLICAS (--replicas) %d: the embedded NATS server (NATS_URL empty) is one server and keeps one replica: "+
			"set DLQ_REPLICAS to 1, or NATS_URL to a JetStream cluster of at least %[1]d servers", c.Replicas)
	}
	if err := dlq.CheckStreamMaxAge(c.StreamMaxAge); err != nil {
		return c, fmt.Errorf("DLQ_MAX_AGE (--dlq-max-age) %s: %w", shortDuration(c.StreamMaxAge), err)
	}
	if err := dlq.CheckStreamMaxAgeAgainstAckWait(c.StreamMaxAge, c.AckWait); err != nil {
		return c, fmt.Errorf("DLQ_MAX_AGE (--dlq-max-age) %s with INGEST_ACK_WAIT (--ingest-ack-wait) %s: %w", shortDuration(c.StreamMaxAge), shortDuration(c.AckWait), err)
	}
	if c.TLSTerminated && !app.IsHTTPS(c.PublicURL) {
		return c, fmt.Errorf("TLS_TERMINATED (--tls-terminated) is on, but CONSOLE_PUBLIC_URL (--public-url) %q is not https: set it to the https:// URL people use", c.PublicURL)
	}
	return c, checkProduction(c, s)
}

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseServe(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	if err := cfg.loadSecrets(); err != nil {
		return err
	}
	a, err := app.New(ctx, cfg.Config, log)
	if err != nil {
		return err
	}
	defer a.Close()
	fmt.Fprintf(stdout, "console %s listening on %s (NATS %s)\n", version, a.URL(), app.Redact(a.NATSURL()))
	return a.Run(ctx)
}

// loadSecrets reads the signing key and the metrics token from their files.
func (c *serveConfig) loadSecrets() error {
	var err error
	if c.AuditSigner, err = audit.LoadSigner(c.AuditKeyFile); err != nil {
		return fmt.Errorf("AUDIT_SIGNING_KEY_FILE (--audit-signing-key): %w", err)
	}
	if c.AuditPublicKeys, err = audit.LoadKeySet(splitList(c.AuditPublicKeyFiles)...); err != nil {
		return fmt.Errorf("AUDIT_PUBLIC_KEYS (--audit-public-keys): %w", err)
	}
	if c.MetricsToken, err = app.ReadSecret(c.MetricsTokenFile); err != nil {
		return fmt.Errorf("METRICS_TOKEN_FILE (--metrics-token-file): %w", err)
	}
	return nil
}
