package app

import (
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
)

// plainDatabase says how a connection to the PostgreSQL of dsn may travel
// unprotected ("" when it does not): to a host other than loopback or a
// socket, without TLS, or with TLS whose server certificate nobody checks
// (sslmode prefer, the default, and require), or falling back to plain
// text when TLS is refused (allow, prefer). Whoever is on that path reads
// every dead letter, and can change what the console stores and the
// audit log it writes. A dsn it cannot read is left to the pool to refuse.
func plainDatabase(dsn string) string {
	c, err := pgconn.ParseConfig(dsn)
	if err != nil || strings.HasPrefix(c.Host, "/") || IsLoopback(c.Host) {
		return ""
	}
	switch {
	case c.TLSConfig == nil:
		return "without TLS (sslmode disable)"
	case c.TLSConfig.InsecureSkipVerify && c.TLSConfig.VerifyPeerCertificate == nil:
		return "with TLS whose server certificate is not checked (sslmode require or prefer, the default)"
	}
	for _, f := range c.Fallbacks {
		if f.TLSConfig == nil {
			return "falling back to plain text when TLS is refused (sslmode allow or prefer)"
		}
	}
	return ""
}

// plainNATS reports whether nc is connected to a NATS server other than
// loopback without TLS (plainNATSAt).
func plainNATS(nc *nats.Conn) bool {
	if nc == nil {
		return false
	}
	_, err := nc.TLSConnectionState()
	return plainNATSAt(nc.ConnectedUrl(), err == nil)
}

// plainNATSAt reports whether a connection to the NATS server at
// connected, with TLS or not, travels unprotected: to a host other than
// loopback without TLS. Whoever is on that path can answer the console's
// publishes as the broker would (a replay shown stored that no stream
// holds), deliver dead letters of their own and read the token.
func plainNATSAt(connected string, tls bool) bool {
	u, err := url.Parse(connected)
	if err != nil || tls {
		return false
	}
	host := u.Hostname()
	return host != "" && !IsLoopback(host)
}

// warnPlainTransport logs, for a console served over https (most likely
// a production one), each connection its promises ride on that travels
// unprotected: PostgreSQL without verified TLS (plainDatabase), NATS
// without TLS (plainNATS). A warning, not a refusal: a private network
// may be what the operator chose to trust, and a console that will not
// start ingests nothing.
func warnPlainTransport(cfg Config, nc *nats.Conn, log *slog.Logger) {
	if !cfg.Secure() {
		return
	}
	if how := plainDatabase(cfg.DatabaseURL); how != "" {
		log.Warn("DATABASE_URL connects to PostgreSQL on another host "+how+": whoever is on the path reads every dead letter and can change what is stored "+
			"and audited; use sslmode=verify-full (with sslrootcert naming the server's CA) in DATABASE_URL", "database_host", databaseHost(cfg.DatabaseURL))
	}
	if cfg.NATSURL != "" && plainNATS(nc) {
		log.Warn("NATS_URL connects to a NATS server on another host without TLS: whoever is on the path can answer a replay's publish as the broker "+
			"(shown stored when no stream holds it), deliver dead letters of their own and read the token; use tls:// and the servers' TLS",
			"nats_url", Redact(nc.ConnectedUrl()))
	}
}

// databaseHost is the host (and port) dsn names, for the log.
func databaseHost(dsn string) string {
	c, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return ""
	}
	return net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
}
