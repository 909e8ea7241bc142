package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarantine-console/quarantine/dlq"
)

// connectNATS connects to the configured servers, waiting up to NATSWait
// (default 1 minute) for one to answer, or starts the embedded one when
// none is configured (loopback only, with a token) and connects to it.
func (a *App) connectNATS(ctx context.Context) error {
	a.natsURL = a.cfg.NATSURL
	token, err := ReadSecret(a.cfg.NATSTokenFile)
	if err != nil && !(a.natsURL == "" && errors.Is(err, os.ErrNotExist)) {
		return fmt.Errorf("NATS_TOKEN_FILE (--nats-token-file): %w", err)
	}
	if a.natsURL == "" {
		if token, err = embeddedToken(a.cfg.NATSTokenFile, token); err != nil {
			return err
		}
		if err := a.startEmbeddedNATS(token); err != nil {
			return err
		}
		if a.cfg.Secure() {
			// Served over https, so most likely a production console whose
			// NATS_URL was left out or misspelt (NATS_URLS): it would be
			// ready and ingest nothing of the real DLQ stream.
			a.log.Warn("NATS_URL is empty: this console runs an embedded NATS server of its own, yet it is served over https (CONSOLE_PUBLIC_URL) like a production console; "+
				"it ingests none of the dead letters of your NATS servers and replays into a server nobody else uses. Set NATS_URL (not NATS_URLS) to your NATS servers",
				"public_url", a.cfg.PublicURL, "embedded_addr", a.cfg.NATSEmbeddedAddr)
		}
	}
	opts := []nats.Option{
		nats.Name("quarantine-console"),
		nats.MaxReconnects(-1),
		// No reconnect buffer: a publish while the connection is down
		// fails at once instead of waiting in the client and reaching the
		// broker when it is back, perhaps after a replay's duplicate
		// window (a second effect). Replay workers publish on this
		// connection; the ingester asks again after a reconnect and its
		// acks' redeliveries are deduplicated.
		nats.ReconnectBufSize(-1),
		NATSResetOnClose(),
		nats.RetryOnFailedConnect(false),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrBadHeaderMsg) {
				// A dead letter with a header block the client cannot read:
				// the ingester reads it again from the stream.
				a.log.Debug("NATS delivered a message whose headers it cannot read", "err", err)
				return
			}
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			a.log.Warn("NATS", "subscription", subject, "err", err)
		}),
	}
	opts = append(opts, natsEvents(a.log)...)
	opts = append(opts, a.natsEnd.option(a.log))
	if token != "" {
		opts = append(opts, nats.Token(token))
	}
	nc, err := dialNATS(ctx, a.natsURL, cmp.Or(a.cfg.NATSWait, time.Minute), a.log, opts...)
	if err != nil {
		return fmt.Errorf("NATS_URL %s: %w", Redact(a.natsURL), err)
	}
	a.NATS = nc
	if a.JetStream, err = jetstream.New(nc); err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	return nil
}

// jetStreamOff is err, from a start's JetStream set-up or check, with
// url named when it says JetStream is off there (dlq.ErrJetStreamNotEnabled):
// the operator reads which server, or which account, to give JetStream.
func jetStreamOff(url string, err error) error {
	if errors.Is(err, dlq.ErrJetStreamNotEnabled) {
		return fmt.Errorf("NATS_URL %s: %w", Redact(url), err)
	}
	return err
}

// startEmbeddedNATS runs the NATS server inside the process, on a loopback
// address only (NATS_EMBEDDED_ADDR is checked when parsed; this refuses
// again), requiring token from every client.
func (a *App) startEmbeddedNATS(token string) error {
	host, portStr, err := net.SplitHostPort(a.cfg.NATSEmbeddedAddr)
	if err != nil || !IsLoopback(host) {
		return fmt.Errorf("NATS_EMBEDDED_ADDR %s: the embedded NATS server listens on loopback only", a.cfg.NATSEmbeddedAddr)
	}
	port, _ := strconv.Atoi(portStr)
	if port == 0 {
		port = server.RANDOM_PORT
	}
	if err := os.MkdirAll(a.cfg.NATSEmbeddedDir, 0o750); err != nil {
		return fmt.Errorf("NATS_EMBEDDED_DIR: %w", err)
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: "quarantine-embedded", Host: host, Port: port, JetStream: true,
		StoreDir: a.cfg.NATSEmbeddedDir, NoSigs: true, MaxPayload: 8 << 20, Authorization: token,
	})
	if err != nil {
		return fmt.Errorf("embedded NATS: %w", err)
	}
	failed := newStartFailure()
	ns.SetLoggerV2(failed, false, false, false)
	go ns.Start()
	if err := waitEmbedded(ns, failed, 10*time.Second); err != nil {
		ns.Shutdown()
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("NATS_EMBEDDED_ADDR %s: the address is in use (another NATS server or console listens there): "+
				"choose a free one, or set NATS_URL to use that server (%w)", a.cfg.NATSEmbeddedAddr, err)
		}
		return fmt.Errorf("embedded NATS did not start on %s (NATS_EMBEDDED_ADDR): %w", a.cfg.NATSEmbeddedAddr, err)
	}
	a.embedded = ns
	a.natsURL = ns.ClientURL()
	a.log.Info("started embedded NATS (loopback, token required)", "url", a.natsURL, "store", a.cfg.NATSEmbeddedDir,
		"token_file", a.cfg.NATSTokenFile)
	return nil
}

// waitEmbedded waits up to within for ns to take connections, and stops
// at once when ns reports it cannot start (its listener refused: the
// address in use), which ReadyForConnections alone would wait out.
func waitEmbedded(ns *server.Server, failed *startFailure, within time.Duration) error {
	deadline := time.Now().Add(within)
	for !ns.ReadyForConnections(50 * time.Millisecond) {
		select {
		case err := <-failed.err:
			return err
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready for connections after %s", within)
		}
	}
	return nil
}

// startFailure is the embedded server's logger: it keeps the first fatal
// error (the server reports a listener it could not open, or JetStream it
// could not start, only so, and goes on without them) and drops the rest,
// as the server did with no logger.
type startFailure struct{ err chan error }

func newStartFailure() *startFailure { return &startFailure{err: make(chan error, 1)} }

// Fatalf keeps the message, with the error among v as its cause (so that
// errors.Is sees it).
func (f *startFailure) Fatalf(format string, v ...any) {
	err := &loggedError{msg: fmt.Sprintf(format, v...)}
	for _, a := range v {
		if cause, ok := a.(error); ok {
			err.cause = cause
		}
	}
	select {
	case f.err <- err:
	default:
	}
}

// loggedError is a message the embedded server logged, and its cause.
type loggedError struct {
	msg   string
	cause error
}

func (e *loggedError) Error() string { return e.msg }
func (e *loggedError) Unwrap() error { return e.cause }

func (*startFailure) Noticef(string, ...any) {}
func (*startFailure) Warnf(string, ...any)   {}
func (*startFailure) Errorf(string, ...any)  {}
func (*startFailure) Debugf(string, ...any)  {}
func (*startFailure) Tracef(string, ...any)  {}

// embeddedToken is the embedded server's token: the one in file, or a new
// random one, written to file (0600) when a file is named so that other
// processes (console demo) can connect; without a file, only this process
// knows it.
func embeddedToken(file, fromFile string) (string, error) {
	if fromFile != "" {
		return fromFile, nil
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	token := hex.EncodeToString(b)
	if file != "" {
		if err := WriteNewFile(file, []byte(token+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("NATS_TOKEN_FILE (--nats-token-file): %w", err)
		}
	}
	return token, nil
}

// WriteNewFile writes data to path, which must not exist yet (a secret is
// never overwritten), with mode. The data goes to a temporary file in the
// same directory first and is linked to path only when complete, so that a
// failed write (a full disk, say) never leaves a half-written secret that a
// later start or another process would read as the whole one; the link
// fails like O_EXCL when path exists.
func WriteNewFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // the link below keeps the file under path
	if err := writeAll(tmp, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeAll writes data to f, gives it mode, flushes it to disk and closes it.
func writeAll(f *os.File, data []byte, mode os.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadSecret returns the first line of file, trimmed; "" when file is "".
func ReadSecret(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	s := strings.TrimSpace(line)
	if s == "" {
		return "", fmt.Errorf("%s is empty", file)
	}
	return s, nil
}

// IsLoopback reports whether host (of host:port) only reaches this machine:
// "localhost" or a loopback IP. The empty host (every interface) is not.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// dialNATS connects to url, trying again every second for up to wait
// while no server takes the connection: NATS restarting, or a cluster
// started at the same time as the console. A refused authorization ends
// the wait at once: waiting does not mend a token.
func dialNATS(ctx context.Context, url string, wait time.Duration, log *slog.Logger, opts ...nats.Option) (*nats.Conn, error) {
	deadline := time.Now().Add(wait)
	for {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			return nc, nil
		}
		if refusedAuth(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		log.Warn("waiting for NATS", "url", Redact(url), "err", err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
}

// refusedAuth reports whether the server refused the client's credentials.
func refusedAuth(err error) bool {
	for _, e := range []error{nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// natsEvents are the options that log a connection's disconnects and
// reconnects: a replay publish fails while it is down. Close, at shutdown,
// calls the disconnect handler too, with no error: that is logged at info
// as the connection closed, not warned about as a disconnect.
func natsEvents(log *slog.Logger) []nats.Option {
	return []nats.Option{
		nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
			if err == nil && c.IsClosed() {
				log.Info("NATS connection closed")
				return
			}
			log.Warn("NATS disconnected", "err", err)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("NATS reconnected", "url", c.ConnectedUrlRedacted()) }),
	}
}

// DialNATS connects to url as name, with the token in tokenFile (if any),
// reconnecting forever, with JetStream, and with extra options. It keeps
// nothing to send while it reconnects (as connectNATS): a publish then
// fails at once. It tries once; WaitForNATS waits for a server first.
func DialNATS(url, tokenFile, name string, extra ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	opts, err := dialOptions(tokenFile, name)
	if err != nil {
		return nil, nil, err
	}
	opts = append(opts, extra...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("NATS_URL %s: %w", Redact(url), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}

// WaitForNATS waits up to wait for a server at url to take a connection
// with the token in tokenFile (as DialNATS makes it), then lets it go:
// `console worker` waits for NATS this way before it starts, as serve does
// (NATS_WAIT).
func WaitForNATS(ctx context.Context, url, tokenFile string, wait time.Duration, log *slog.Logger) error {
	opts, err := dialOptions(tokenFile, "quarantine-worker-start")
	if err != nil {
		return err
	}
	nc, err := dialNATS(ctx, url, wait, log, opts...)
	if err != nil {
		return fmt.Errorf("NATS_URL %s: %w", Redact(url), err)
	}
	nc.Close()
	return nil
}

// dialOptions are DialNATS's connection options.
func dialOptions(tokenFile, name string) ([]nats.Option, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectBufSize(-1), NATSResetOnClose()}
	token, err := ReadSecret(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("NATS_TOKEN_FILE (--nats-token-file): %w", err)
	}
	if token != "" {
		opts = append(opts, nats.Token(token))
	}
	return opts, nil
}

// NATSResetOnClose dials a NATS connection whose close drops what the
// kernel has not delivered to the server yet (SO_LINGER 0: the server
// gets a reset), where a plain close goes on sending it for as long as
// TCP retries, up to some fifteen minutes. A replay worker that had no
// answer to a publish and no answer to a ping on the same connection
// resets it before its job may be retried (replay.Worker's unstick, which
// closes the socket through the dialer's Reset, under no lock of the NATS
// client's: a write blocked on a stalled path holds that lock), and a
// process that dies closes its sockets: either way a publish held by a
// stalled path must not reach the broker after a retry's window, as a
// second effect. The cost: at a close, acks and publishes not yet
// delivered are dropped, which the ingester's redelivery and the replay's
// unknown outcomes already handle. Each call makes the dialer of one
// connection (it resets the socket it dialed last, a NATS connection
// having one at a time): don't share the option between connections.
// (TestRev37StalledConnectionsPublishIsDroppedBeforeARetry)
func NATSResetOnClose() nats.Option { return nats.SetCustomDialer(&resetOnClose{}) }

type resetOnClose struct {
	mu   sync.Mutex
	conn net.Conn
}

// Dial dials as the NATS client's own dialer does (its default 2 s
// timeout for each server tried), then sets SO_LINGER 0.
func (d *resetOnClose) Dial(network, address string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: nats.DefaultTimeout}).Dial(network, address)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.SetLinger(0); err != nil {
			c.Close()
			return nil, fmt.Errorf("set SO_LINGER 0: %w", err)
		}
	}
	d.mu.Lock()
	d.conn = c
	d.mu.Unlock()
	return c, nil
}

// Reset closes the socket dialed last at once, dropping what it has not
// delivered; the NATS client sees the connection fail and reconnects.
func (d *resetOnClose) Reset() {
	d.mu.Lock()
	c := d.conn
	d.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}
