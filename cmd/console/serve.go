package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
)

// serveConfig is what `console serve` is told: the console's settings and
// how to log.
type serveConfig struct {
	app.Config
	LogLevel  string
	LogFormat string
}

func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	c := serveConfig{Config: app.Config{Version: version}}
	var watch string
	s := newSettings("serve", getenv, stderr)
	s.str(&c.Addr, "addr", "CONSOLE_ADDR", "127.0.0.1:8080", "HTTP listen address", checkAddr)
	s.str(&c.DatabaseURL, "database-url", "DATABASE_URL", "", "PostgreSQL connection string", checkPostgresURL)
	s.str(&c.NATSURL, "nats-url", "NATS_URL", "", "NATS server URLs; empty starts an embedded server", checkNATSURL)
	s.str(&c.NATSEmbeddedAddr, "nats-embedded-addr", "NATS_EMBEDDED_ADDR", "127.0.0.1:4222", "listen address of the embedded NATS server", checkAddr)
	s.str(&c.NATSEmbeddedDir, "nats-embedded-dir", "NATS_EMBEDDED_DIR", ".data/nats", "JetStream storage of the embedded NATS server", nil)
	s.str(&c.Prefix, "dlq-prefix", "DLQ_SUBJECT_PREFIX", dlq.DefaultSubjectPrefix, "subject prefix of dead letters: <prefix>.<tenant>.<item_type>", checkToken)
	s.str(&c.Stream, "dlq-stream", "DLQ_STREAM", "DLQ", "JetStream stream holding dead letters", checkStreamName)
	s.str(&watch, "watch-streams", "DLQ_WATCH_STREAMS", "", "streams whose MAX_DELIVERIES/MSG_TERMINATED advisories are captured: STREAM[:template],...", func(v string) error {
		var err error
		c.Watch, err = dlq.ParseWatchStreams(v)
		return err
	})
	s.integer(&c.Replicas, "replicas", "DLQ_REPLICAS", 1, "replicas of the streams the console creates", 1, 5)
	s.integer(&c.BatchSize, "ingest-batch", "INGEST_BATCH_SIZE", 1000, "dead letters per insert", 1, 10000)
	s.integer(&c.IngestWorkers, "ingest-workers", "INGEST_WORKERS", 2, "concurrent insert workers", 1, 64)
	s.duration(&c.BatchWait, "ingest-wait", "INGEST_MAX_WAIT", 50*time.Millisecond, "longest a dead letter waits for its batch", time.Millisecond, 10*time.Second)
	s.duration(&c.AckWait, "ingest-ack-wait", "INGEST_ACK_WAIT", time.Minute, "redelivery of dead letters a stopped ingester did not ack", time.Second, time.Hour)
	s.duration(&c.DBWait, "db-wait", "DATABASE_WAIT", 30*time.Second, "how long to wait for PostgreSQL at start", 0, 10*time.Minute)
	s.str(&c.LogLevel, "log-level", "LOG_LEVEL", "info", "debug, info, warn or error", checkLogLevel)
	s.str(&c.LogFormat, "log-format", "LOG_FORMAT", "text", "text or json", checkOneOf("text", "json"))
	s.str(&c.PublicURL, "public-url", "CONSOLE_PUBLIC_URL", "", "URL people use to reach the console; default http://<addr>; https makes cookies Secure", checkOptionalHTTPURL)
	s.str(&c.OIDC.Issuer, "oidc-issuer", "OIDC_ISSUER", "", "OpenID Connect issuer URL of the identity provider", checkRequiredHTTPURL)
	s.str(&c.OIDC.ClientID, "oidc-client-id", "OIDC_CLIENT_ID", "", "client id registered at the identity provider", checkRequired)
	s.str(&c.OIDC.ClientSecret, "oidc-client-secret", "OIDC_CLIENT_SECRET", "", "client secret", nil)
	s.str(&c.OIDC.RedirectURL, "oidc-redirect-url", "OIDC_REDIRECT_URL", "", "callback URL registered at the provider; default <public url>/auth/callback", checkOptionalHTTPURL)
	s.str(&c.OIDC.GroupsClaim, "oidc-groups-claim", "OIDC_GROUPS_CLAIM", "groups", "ID token claim holding the user's groups", checkRequired)
	s.duration(&c.OIDCWait, "oidc-wait", "OIDC_WAIT", 30*time.Second, "how long to wait for the identity provider at start", 0, 10*time.Minute)
	s.duration(&c.IdleTimeout, "session-idle-timeout", "SESSION_IDLE_TIMEOUT", time.Hour, "sign out after this long without a request", time.Minute, 7*24*time.Hour)
	s.duration(&c.Lifetime, "session-lifetime", "SESSION_LIFETIME", 12*time.Hour, "sign out this long after sign-in", time.Minute, 30*24*time.Hour)
	var groups string
	s.str(&groups, "group-roles", "AUTHZ_GROUP_ROLES", "", "extra group mappings: group=tenant:role[,tenant:role];... (groups named tenant:role map without this)", func(v string) error {
		var err error
		c.Groups, err = authz.ParseGroupMap(v)
		return err
	})
	s.replay(&c.Replay, 2)
	if err := s.parse(args); err != nil {
		return c, err
	}
	c.Replay.Groups = c.Groups
	c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	return c, nil
}

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseServe(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel, cfg.LogFormat)
	a, err := app.New(ctx, cfg.Config, log)
	if err != nil {
		return err
	}
	defer a.Close()
	fmt.Fprintf(stdout, "console %s listening on %s (NATS %s)\n", version, a.URL(), a.NATSURL())
	return a.Run(ctx)
}
