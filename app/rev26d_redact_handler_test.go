package app_test

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/app"
)

// TestRevOps26LogLinesHideSecretsInEveryShapeOfAttribute: every log line
// of the console goes through app.NewRedactingHandler (cmd/console's
// newLogger). A credential reaches a line not only as its message or a
// plain string: as an attribute bound once with Logger.With (a component's
// logger carrying the URL it talks to), inside a group (slog.Group), as
// an error, or as a list of strings (the NATS servers). None of them may
// print the password or token, while what is not secret (the user, the
// host) stays readable.
func TestRevOps26LogLinesHideSecretsInEveryShapeOfAttribute(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-s3cret"
	dsn := "postgres://app:" + secret + "@db.internal:5432/quarantine"
	cases := map[string]func(log *slog.Logger){
		"Message":  func(log *slog.Logger) { log.Info("connecting to " + dsn) },
		"String":   func(log *slog.Logger) { log.Info("connecting", "url", dsn) },
		"Error":    func(log *slog.Logger) { log.Warn("connect failed", "err", errors.New("dial "+dsn+": refused")) },
		"With":     func(log *slog.Logger) { log.With("url", dsn).Info("connecting") },
		"Group":    func(log *slog.Logger) { log.Info("connecting", slog.Group("db", "url", dsn)) },
		"WithGrp":  func(log *slog.Logger) { log.With(slog.Group("db", "url", dsn)).Info("connecting") },
		"Strings":  func(log *slog.Logger) { log.Info("servers", "urls", []string{"nats://tok" + secret + "@n1:4222", dsn}) },
		"KeyValue": func(log *slog.Logger) { log.Info("connecting", "dsn", "host=db user=app password="+secret) },
	}
	for name, logIt := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for format, newHandler := range map[string]func(b *bytes.Buffer) slog.Handler{
				"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
				"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
			} {
				var out bytes.Buffer
				logIt(slog.New(app.NewRedactingHandler(newHandler(&out))))
				line := out.String()
				assert.NotEmpty(t, line, format)
				assert.NotContains(t, line, secret, "%s: %s", format, line)
				assert.Contains(t, line, "xxxxx", "%s: the credential is marked as hidden: %s", format, line)
			}
		})
	}
}
