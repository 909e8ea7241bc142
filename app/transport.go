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
// unprotected ("" when it does not), and to which host (and port): to a
// host other than loopback or a socket, without TLS, or with TLS whose
// server certificate nobody checks (sslmode prefer, the default, and
// require), or falling back to plain text when TLS is refused (allow,
// prefer). Whoever is on that path reads every dead letter, and can
// change what the console stores and the audit log it writes. A dsn it
// cannot read is left to the pool to refuse.
func plainDatabase(dsn string) (how, host string) {
	c, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", ""
	}
	// The first host and every fallback (host=a,b; sslmode allow and
	// prefer add a plain one per host): any of them the pool may reach.
	tries := []*pgconn.FallbackConfig{{Host: c.Host, Port: c.Port, TLSConfig: c.TLSConfig}}
	tries = append(tries, c.Fallbacks...)
	plain, unverified := false, false
	for _, f := range tries {
		if strings.HasPrefix(f.Host, "/") || IsLoopback(f.Host) {
			continue
		}
		switch {
		case f.TLSConfig == nil:
			plain = true
		case f.TLSConfig.InsecureSkipVerify && f.TLSConfig.VerifyPeerCertificate == nil:
			unverified = true
		default:
			continue
		}
		if host == "" {
			host = net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port)))
		}
	}
	switch {
	case plain && unverified:
		how = "with TLS whose server certificate is not checked, falling back to plain text when TLS is refused (sslmode prefer, the default, or allow)"
	case plain:
		how = "without TLS (sslmode disable)"
	case unverified:
		how = "with TLS whose server certificate is not checked (sslmode require)"
	}
	return how, host
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

// warnPlainTransport logs each connection a process's promises ride on
// that travels unprotected: PostgreSQL without verified TLS
// (plainDatabase), NATS without TLS (plainNATS; natsURL "" is the
// embedded server, on loopback). serve calls it when it is served over
// https (most likely a production console), worker always (it has no
// pages to tell, and a worker on another host than its database is no
// development one). A warning, not a refusal: a private network may be
// what the operator chose to trust, and a process that will not start
// ingests and replays nothing.
func warnPlainTransport(databaseURL, natsURL string, nc *nats.Conn, log *slog.Logger) {
	if how, host := plainDatabase(databaseURL); how != "" {
		log.Warn("DATABASE_URL connects to PostgreSQL on another host "+how+": whoever is on the path reads every dead letter and can change what is stored "+
			"and audited; use sslmode=verify-full (with sslrootcert naming the server's CA) in DATABASE_URL", "database_host", host)
	}
	if natsURL != "" && plainNATS(nc) {
		log.Warn("NATS_URL connects to a NATS server on another host without TLS: whoever is on the path can answer a replay's publish as the broker "+
			"(shown stored when no stream holds it), deliver dead letters of their own and read the token; use tls:// and the servers' TLS",
			"nats_url", Redact(nc.ConnectedUrl()))
	}
}

// warnServePlainTransport is warnPlainTransport for serve, when it is
// served over https: a development console over http is not warned.
func warnServePlainTransport(cfg Config, nc *nats.Conn, log *slog.Logger) {
	if cfg.Secure() {
		warnPlainTransport(cfg.DatabaseURL, cfg.NATSURL, nc, log)
	}
}
