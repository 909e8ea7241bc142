package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
)

// errUsage is returned after usage was printed; it exits with status 2.
var errUsage = errors.New("usage")

func exitCode(err error) int {
	var ce *codedError
	switch {
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &ce):
		return ce.code
	}
	return 1
}

// usageError is err, a command line the command does not take, with the
// usage exit status 2.
func usageError(err error) error { return &codedError{code: 2, err: err} }

// command runs one console command with the arguments after its name.
type command func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error

// runGroup runs the command of a group of them ("console audit …", name
// group, its usage text usage) that args name, with the arguments after
// it. Asked for help, it prints usage; with no command or an unknown one,
// it prints usage to stderr and fails as a usage error (exit 2), naming
// the unknown one.
func runGroup(ctx context.Context, group, usage string, commands map[string]command, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if run, ok := commands[args[0]]; ok {
			return run(ctx, args[1:], getenv, stdout, stderr)
		}
		switch args[0] {
		case "-h", "-help", "--help", "help":
			fmt.Fprint(stdout, usage)
			return nil
		}
	}
	fmt.Fprint(stderr, usage)
	if len(args) > 0 {
		return usageError(fmt.Errorf("unknown %s command %q", group, args[0]))
	}
	return errUsage
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

// secretSettings are the settings whose value may hold a credential
// whole: a password or token in a URL's user information, a client
// secret. Their value is never printed: not as a flag's default in the
// usage (a refused command line prints it on stderr, which the log
// collector keeps), nor quoted in a refusal (valueShown).
var secretSettings = map[string]bool{
	"DATABASE_URL": true, "MIGRATE_DATABASE_URL": true, "NATS_URL": true, "OIDC_CLIENT_SECRET": true,
}

// valueShown is how a refusal of setting env quotes its value v: whole
// for most, with the credentials of a URL left out (app.Redact); for a
// secret setting, only a URL that parses, redacted, and nothing at all
// otherwise (ok false): an unparseable URL's user information cannot be
// told from its host, so no redaction of it can be trusted.
func valueShown(env, v string) (shown string, ok bool) {
	if !secretSettings[env] {
		return app.Redact(v), true
	}
	for _, part := range strings.Split(v, ",") {
		if u, err := url.Parse(strings.TrimSpace(part)); err != nil || u.Scheme == "" || u.Host == "" {
			return "", false
		}
	}
	return app.Redact(v), true
}

func (s *settings) str(p *string, flagName, env, fallback, help string, check func(string) error) {
	if secretSettings[env] {
		// Registered with the built-in default alone, so that the usage
		// shows no value from the environment, then set.
		s.fs.StringVar(p, flagName, fallback, help+" ("+env+secretShown(s.getenv(env))+")")
		*p = s.def(env, fallback)
	} else {
		s.fs.StringVar(p, flagName, s.def(env, fallback), help+" ("+env+")")
	}
	if check != nil {
		s.checks = append(s.checks, func() error {
			if err := check(*p); err != nil {
				if shown, ok := valueShown(env, *p); ok {
					return fmt.Errorf("%s (--%s) %q: %w", env, flagName, shown, err)
				}
				return fmt.Errorf("%s (--%s) (its value not shown: it may hold a password): %w", env, flagName, err)
			}
			return nil
		})
	}
}

// secretShown is what the usage says of a secret setting's value: that
// it is set, never what it is.
func secretShown(v string) string {
	if v == "" {
		return ""
	}
	return "; set, not shown"
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

// boolFlag is a flag given alone (--x) or with a value (--x=false), whose
// default comes from an environment variable checked after parsing.
type boolFlag struct{ raw string }

func (b *boolFlag) String() string     { return b.raw }
func (b *boolFlag) Set(v string) error { b.raw = v; return nil }
func (b *boolFlag) IsBoolFlag() bool   { return true }

func (s *settings) boolean(p *bool, flagName, env string, help string) {
	raw := &boolFlag{raw: s.def(env, "false")}
	s.fs.Var(raw, flagName, fmt.Sprintf("%s, true or false (%s)", help, env))
	s.checks = append(s.checks, func() error {
		b, err := strconv.ParseBool(strings.TrimSpace(raw.raw))
		if err != nil {
			return fmt.Errorf("%s (--%s) %q: must be true or false", env, flagName, raw.raw)
		}
		*p = b
		return nil
	})
}

func (s *settings) duration(p *time.Duration, flagName, env string, fallback time.Duration, help string, lo, hi time.Duration) {
	raw := new(string)
	s.fs.StringVar(raw, flagName, s.def(env, fallback.String()), fmt.Sprintf("%s, %s to %s (%s)", help, lo, hi, env))
	s.checks = append(s.checks, func() error {
		d, err := time.ParseDuration(strings.TrimSpace(*raw))
		if err != nil || d < lo || d > hi {
			return fmt.Errorf("%s (--%s) %q: must be a duration from %s to %s, like %s", env, flagName, *raw, shortDuration(lo), shortDuration(hi), durationExamples(fallback, lo, hi))
		}
		*p = d
		return nil
	})
}

// shortDuration writes d as Go duration syntax without zero units:
// "1m", "24h", "1h30m", "50ms".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// durationExamples are two durations from lo to hi, as a duration
// setting's error suggests them: its default (when not 0) and the bounds.
func durationExamples(fallback, lo, hi time.Duration) string {
	first := fallback
	if first <= lo || first >= hi {
		first = lo
	}
	if first == 0 {
		first = min(hi, time.Second)
	}
	if first == hi {
		return shortDuration(hi)
	}
	return shortDuration(first) + " or " + shortDuration(hi)
}

// size binds a byte size: a whole number of bytes, or with a unit (KB,
// MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of 1024).
// Other than 0 it must be at least floor: a number meant with a unit and
// given without one ("10" for 10GiB) reads as bytes, far below any size
// such a setting means, so it is refused, asking for the unit, rather than
// run with (DLQ_MAX_BYTES=10 made a stream that keeps no dead letter).
func (s *settings) size(p *int64, flagName, env, fallback, help string, floor int64) {
	raw := new(string)
	s.fs.StringVar(raw, flagName, s.def(env, fallback), fmt.Sprintf("%s; 0 or at least %s (%s)", help, sizeText(floor), env))
	s.checks = append(s.checks, func() error {
		n, err := parseSize(*raw)
		if err == nil && n != 0 && n < floor {
			err = fmt.Errorf("must be 0 or at least %s", sizeText(floor))
			if bare := strings.TrimSpace(*raw); strings.Trim(bare, "0123456789") == "" {
				err = fmt.Errorf("%w; a number without a unit is bytes: give the unit, like %[2]sKiB, %[2]sMiB or %[2]sGiB", err, bare)
			}
		}
		if err != nil {
			return fmt.Errorf("%s (--%s) %q: %w", env, flagName, *raw, err)
		}
		*p = n
		return nil
	})
}

// sizeText writes n bytes with the largest power-of-1024 unit that
// divides it: "1MiB", "512KiB", "1000B".
func sizeText(n int64) string {
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// parseSize reads a byte size for size.
func parseSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	units := []struct {
		suffix string
		n      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = strings.TrimSpace(num), u.n
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, errors.New("must be a whole number of bytes, optionally with KB, MB, GB, TB, KiB, MiB, GiB or TiB, like 10GiB")
	}
	return n * mult, nil
}

// given reports whether the flag was set on the command line (after
// parse), not only through its environment variable or default.
func (s *settings) given(flagName string) bool {
	found := false
	s.fs.Visit(func(f *flag.Flag) { found = found || f.Name == flagName })
	return found
}

// parse reads args into the settings and checks every value. A command
// line that is not the command's (an unknown flag, a flag without its
// value, an argument it takes none of) is a usage error, exit status 2,
// after the flag set printed the problem and the flags; a bad value exits
// 1, naming it.
func (s *settings) parse(args []string) error {
	// A default from the environment may be a URL with credentials in a
	// setting not marked secret: the usage shows none of them.
	s.fs.VisitAll(func(f *flag.Flag) { f.DefValue = app.Redact(f.DefValue) })
	if err := s.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError(err)
	}
	if s.fs.NArg() > 0 {
		fmt.Fprintf(s.fs.Output(), "unexpected argument %q\n", s.fs.Arg(0))
		s.fs.Usage()
		return usageError(fmt.Errorf("unexpected argument %q", s.fs.Arg(0)))
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
	if err != nil {
		return errUnparseableURL
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return errors.New("must be a postgres:// connection string")
	}
	return nil
}

// errUnparseableURL is the refusal of a URL setting that does not parse;
// most often a password with reserved characters (a generated one holds
// '/' and '+'), which must be percent-encoded.
var errUnparseableURL = errors.New("does not parse as a URL: percent-encode reserved characters in the user name and password " +
	"(/ as %2F, # as %23, ? as %3F, @ as %40, : as %3A, a blank as %20, % as %25)")

func checkNATSURL(v string) error {
	if v == "" {
		return nil
	}
	for _, part := range strings.Split(v, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil {
			return errUnparseableURL
		}
		if u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss") {
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

// hostOf returns the host of a host:port, or "" when it does not parse.
func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return h
}

// checkFile accepts an empty value or a file that can be opened.
func checkFile(v string) error {
	if v == "" {
		return nil
	}
	f, err := os.Open(v)
	if err != nil {
		return errors.New("cannot be read: " + strings.TrimPrefix(err.Error(), "open "+v+": "))
	}
	return f.Close()
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
	if l.UnmarshalText([]byte(v)) != nil {
		return errors.New("must be debug, info, warn or error")
	}
	return nil
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
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(app.NewRedactingHandler(h))
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

// checkPublicURL accepts an http(s) URL with nothing after its host but
// one "/": every page, link, redirect and cookie of the console is rooted
// at "/" (the session cookie's __Host- prefix needs Path=/), so it cannot
// be served under a path, and the default OIDC_REDIRECT_URL built on a
// URL with a path, a query or a fragment names a callback it has no route
// for.
func checkPublicURL(v string) error {
	if err := checkOptionalHTTPURL(v); err != nil || v == "" {
		return err
	}
	u, _ := url.Parse(v) // parsed by checkOptionalHTTPURL
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
		return errors.New("must be the console's origin only, like https://quarantine.example.com: the console serves every page, " +
			"redirect and cookie at /, and cannot be served under a path (give it a host name of its own), nor with a query or fragment")
	}
	return nil
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

// checkEmbeddedAddr accepts only loopback addresses: the embedded NATS
// server is for one machine; anything wider is a NATS cluster's job.
func checkEmbeddedAddr(v string) error {
	if err := checkAddr(v); err != nil {
		return err
	}
	if !app.IsLoopback(hostOf(v)) {
		return errors.New("the embedded NATS server listens on loopback only (127.0.0.1, ::1 or localhost); to serve other machines run a NATS server and set NATS_URL")
	}
	return nil
}

func checkMetricsAddr(v string) error {
	if v == app.MetricsOff {
		return nil
	}
	return checkAddr(v)
}

// parseCIDRs reads a comma-separated list of CIDRs (a bare IP is one host).
func parseCIDRs(v string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, p := range splitList(v) {
		if !strings.Contains(p, "/") {
			if ip := net.ParseIP(p); ip != nil && ip.To4() != nil {
				p += "/32"
			} else {
				p += "/128"
			}
		}
		_, n, err := net.ParseCIDR(p)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR like 10.0.0.0/8", p)
		}
		out = append(out, n)
	}
	return out, nil
}

// checkSigningKey requires a readable key file and says how to make one.
func checkSigningKey(v string) error {
	if v == "" {
		return errors.New("is required: the Ed25519 key that signs audit checkpoints; create one with `console audit keygen --out FILE` and keep FILE.pub where verification happens")
	}
	return checkFile(v)
}

// groups binds the group-role settings shared by serve and worker.
func (s *settings) groups(g *authz.GroupMap) {
	s.str(&g.Prefix, "group-prefix", "AUTHZ_GROUP_PREFIX", "", "groups named <prefix><tenant>:<role> give that role (empty: none do); choose a prefix only your provider's administrators can create groups under", authz.CheckGroupPrefix)
	var extra string
	s.str(&extra, "group-roles", "AUTHZ_GROUP_ROLES", "", "groups mapped by exact name: group=tenant:role[,tenant:role];...", func(v string) error {
		m, err := authz.ParseGroupMap(v)
		g.Extra = m.Extra
		return err
	})
}
