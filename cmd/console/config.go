package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine/dlq"
)

// errUsage is returned after usage was printed; it exits with status 2.
var errUsage = errors.New("usage")

func exitCode(err error) int {
	var ce *codedError
	switch {
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		return 2
	case errors.As(err, &ce):
		return ce.code
	}
	return 1
}

// codedError carries a specific exit status.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// settings binds flags to environment variables: a flag's default is its
// variable's value, so flags win over the environment, which wins over the
// built-in default. Every value is validated after parsing; a bad one stops
// the program with one line naming the variable and the flag.
type settings struct {
	fs     *flag.FlagSet
	getenv func(string) string
	checks []func() error
}

func newSettings(name string, getenv func(string) string, stderr io.Writer) *settings {
	fs := flag.NewFlagSet("console "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &settings{fs: fs, getenv: getenv}
}

func (s *settings) def(env, fallback string) string {
	if v := s.getenv(env); v != "" {
		return v
	}
	return fallback
}

func (s *settings) str(p *string, flagName, env, fallback, help string, check func(string) error) {
	s.fs.StringVar(p, flagName, s.def(env, fallback), help+" ("+env+")")
	if check != nil {
		s.checks = append(s.checks, func() error {
			if err := check(*p); err != nil {
				return fmt.Errorf("%s (--%s) %q: %w", env, flagName, *p, err)
			}
			return nil
		})
	}
}

func (s *settings) integer(p *int, flagName, env string, fallback int, help string, lo, hi int) {
	raw := new(string)
	s.fs.StringVar(raw, flagName, s.def(env, strconv.Itoa(fallback)), fmt.Sprintf("%s, %d to %d (%s)", help, lo, hi, env))
	s.checks = append(s.checks, func() error {
		n, err := strconv.Atoi(strings.TrimSpace(*raw))
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%s (--%s) %q: must be a whole number from %d to %d", env, flagName, *raw, lo, hi)
		}
		*p = n
		return nil
	})
}

func (s *settings) duration(p *time.Duration, flagName, env string, fallback time.Duration, help string, lo, hi time.Duration) {
	raw := new(string)
	s.fs.StringVar(raw, flagName, s.def(env, fallback.String()), fmt.Sprintf("%s, %s to %s (%s)", help, lo, hi, env))
	s.checks = append(s.checks, func() error {
		d, err := time.ParseDuration(strings.TrimSpace(*raw))
		if err != nil || d < lo || d > hi {
			return fmt.Errorf("%s (--%s) %q: must be a duration from %s to %s, like 50ms or 2m", env, flagName, *raw, lo, hi)
		}
		*p = d
		return nil
	})
}

func (s *settings) parse(args []string) error {
	if err := s.fs.Parse(args); err != nil {
		return err
	}
	if s.fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", s.fs.Arg(0))
	}
	for _, c := range s.checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

func checkPostgresURL(v string) error {
	if v == "" {
		return errors.New("is required: a PostgreSQL connection string, like postgres://user@host:5432/db")
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return errors.New("must be a postgres:// connection string")
	}
	return nil
}

func checkNATSURL(v string) error {
	if v == "" {
		return nil
	}
	for _, part := range strings.Split(v, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss") {
			return errors.New("must be nats://host:port (comma-separated for a cluster), or empty for the embedded server")
		}
	}
	return nil
}

func checkAddr(v string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return errors.New("must be host:port, like 127.0.0.1:8080")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return errors.New("port must be 0 to 65535")
	}
	_ = host // empty host means all interfaces; allowed on purpose for containers
	return nil
}

func checkToken(v string) error {
	if v == "" {
		return errors.New("must not be empty")
	}
	return dlq.ValidatePublishSubject(v)
}

func checkStreamName(v string) error {
	if v == "" || strings.ContainsAny(v, ".*> \t") {
		return errors.New("must be a stream name without dots, wildcards or spaces")
	}
	return nil
}

func checkLogLevel(v string) error {
	var l slog.Level
	return l.UnmarshalText([]byte(v))
}

func checkOneOf(options ...string) func(string) error {
	return func(v string) error {
		for _, o := range options {
			if v == o {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(options, ", "))
	}
}

func newLogger(w io.Writer, level, format string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // validated by checkLogLevel
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func checkRequired(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("is required")
	}
	return nil
}

func checkOptionalHTTPURL(v string) error {
	if v == "" {
		return nil
	}
	return checkRequiredHTTPURL(v)
}

func checkRequiredHTTPURL(v string) error {
	if v == "" {
		return errors.New("is required: an http(s) URL")
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an http:// or https:// URL")
	}
	return nil
}
