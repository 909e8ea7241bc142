package app

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
)

// Credentials can reach a log line or an error in three shapes: the user
// information of a URL (postgres://user:password@host, nats://token@host),
// a key=value connection string (password=... in a libpq DSN) and a query
// parameter (?password=..., ?token=...).
var (
	urlScheme = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://`)
	dsnSecret = regexp.MustCompile(`(?i)\b([a-z_]*(?:password|passwd|pwd|token|secret))(\s*=\s*)('[^']*'|[^\s&"']+)`)
)

// redactedMark replaces every credential.
const redactedMark = "xxxxx"

// Redact returns s with every credential it recognises replaced by "xxxxx":
// a URL's password (the user name stays, as url.URL.Redacted keeps it), the
// whole user information of a NATS URL (a token sits where a user name
// would), and password=, token= and secret= values in connection strings
// and query strings. It is applied to every log line and to the error that
// ends the program, so a URL given in a setting never shows its secret.
func Redact(s string) string {
	if !strings.Contains(s, "@") && !strings.Contains(s, "=") {
		return s
	}
	return dsnSecret.ReplaceAllString(redactUserinfo(s), "${1}${2}"+redactedMark)
}

// redactUserinfo redacts the user information of every URL in s. A URL
// runs from its scheme to the next blank, quote or scheme (a NATS_URL
// list is one URL after another, comma-separated), and its user
// information to the last '@' in it: a password pasted without
// percent-encoding may hold '/', '?', '#' or '@' itself, and the host
// never holds an '@'. A path or query with an '@' in it may so be taken
// for user information and hidden too: hiding too much is the safe side.
func redactUserinfo(s string) string {
	starts := urlScheme.FindAllStringIndex(s, -1)
	if starts == nil {
		return s
	}
	var b strings.Builder
	done := 0
	for i, st := range starts {
		end := len(s)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		rest := s[st[1]:end]
		if j := strings.IndexAny(rest, " \t\r\n\"'<>"); j >= 0 {
			rest = rest[:j]
		}
		at := strings.LastIndexByte(rest, '@')
		if at < 0 {
			continue
		}
		scheme, info := s[st[0]:st[1]], rest[:at]
		b.WriteString(s[done:st[1]])
		b.WriteString(redactedInfo(scheme, info))
		b.WriteByte('@')
		done = st[1] + at + 1
	}
	b.WriteString(s[done:])
	return b.String()
}

// redactedInfo is a URL's user information info with its secret
// replaced: the password (the user name stays), or the whole of it for a
// scheme whose user name alone may be a token (NATS).
func redactedInfo(scheme, info string) string {
	if user, _, hasPassword := strings.Cut(info, ":"); hasPassword {
		return user + ":" + redactedMark
	}
	switch strings.ToLower(strings.TrimSuffix(scheme, "://")) {
	case "postgres", "postgresql", "http", "https":
		return info // a user name alone is not a secret
	}
	return redactedMark
}

// RedactingHandler is a slog.Handler that redacts the message and every
// string, error and Stringer attribute before passing the record on.
type RedactingHandler struct{ next slog.Handler }

func (h RedactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h RedactingHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h RedactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = redactAttr(a)
	}
	return RedactingHandler{h.next.WithAttrs(clean)}
}

func (h RedactingHandler) WithGroup(name string) slog.Handler {
	return RedactingHandler{h.next.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = redactAttr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, Redact(x.Error()))
		case interface{ String() string }:
			return slog.String(a.Key, Redact(x.String()))
		case []string:
			clean := make([]string, len(x))
			for i, s := range x {
				clean[i] = Redact(s)
			}
			return slog.Any(a.Key, clean)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// NewRedactingHandler returns next behind redaction.
func NewRedactingHandler(next slog.Handler) RedactingHandler { return RedactingHandler{next: next} }
