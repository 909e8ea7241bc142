package app

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRev39PlainTransportOfAnHTTPSConsoleIsWarned: a console served over
// https warns of a PostgreSQL on another host reached without TLS, with
// TLS whose certificate nobody checks (sslmode require, and prefer, the
// default, which also falls back to plain text), and of a NATS server on
// another host reached without TLS. Loopback, sockets and verified TLS
// are not warned of, nor anything of a console over plain http (a
// development one). Every host of DATABASE_URL counts, the first local
// or not. A worker warns whatever its settings (warnPlainTransport).
func TestRev39PlainTransportOfAnHTTPSConsoleIsWarned(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"postgres://app:pw@db.internal.example.com/q":                                        "not checked, falling back to plain text",
		"postgres://app:pw@db.internal.example.com/q?sslmode=require":                        "with TLS whose server certificate is not checked",
		"postgres://app:pw@db.internal.example.com/q?sslmode=disable":                        "without TLS",
		"postgres://app:pw@db.internal.example.com/q?sslmode=allow":                          "falling back to plain text",
		"host=localhost,db.internal.example.com user=app dbname=q sslmode=disable":           "without TLS",
		"host=/var/run/postgresql,db.internal.example.com user=app dbname=q":                 "with TLS whose server certificate is not checked",
		"host=db.internal.example.com user=app dbname=q sslmode=verify-full":                 "",
		"postgres://app:pw@db.internal.example.com/q?sslmode=verify-ca":                      "",
		"postgres://app:pw@127.0.0.1/q?sslmode=disable":                                      "",
		"postgres://app:pw@localhost/q":                                                      "",
		"host=/var/run/postgresql user=app dbname=q":                                         "",
		"postgres://app:pw@db.internal.example.com/q?sslmode=verify-full&sslrootcert=system": "",
	} {
		got, _ := plainDatabase(dsn)
		if want == "" {
			assert.Empty(t, got, dsn)
		} else {
			assert.Contains(t, got, want, dsn)
		}
	}
	assert.True(t, plainNATSAt("nats://nats.internal.example.com:4222", false))
	assert.False(t, plainNATSAt("tls://nats.internal.example.com:4222", true))
	assert.False(t, plainNATSAt("nats://127.0.0.1:4222", false))
	assert.False(t, plainNATSAt("nats://localhost:4222", false))

	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	remote := "postgres://app:pw@db.internal.example.com/q"
	warnServePlainTransport(Config{DatabaseURL: remote, PublicURL: "http://127.0.0.1:8080"}, nil, log)
	assert.Empty(t, logged.String(), "a console over plain http is a development one")
	warnServePlainTransport(Config{DatabaseURL: remote, PublicURL: "https://quarantine.example.com"}, nil, log)
	assert.Contains(t, logged.String(), "DATABASE_URL connects to PostgreSQL on another host")
	assert.Contains(t, logged.String(), "db.internal.example.com:5432")
	assert.NotContains(t, logged.String(), "pw", "no password in the log")
}
