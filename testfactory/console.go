package testfactory

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testidp"
)

// ConsoleOptions change what StartConsole starts; zero fields are defaults.
type ConsoleOptions struct {
	// DatabaseURL is an existing database (the benchmarks' big one), as the
	// runtime role; empty: a fresh one for the test.
	DatabaseURL string
	// Log receives the console's log; nil discards it.
	Log io.Writer
	// NATS, when not nil, changes the in-process NATS server's options
	// (a smaller MaxPayload, say).
	NATS func(*server.Options)
	// Configure, when not nil, changes the console's configuration last
	// (StallAfter, IngestTuning...).
	Configure func(*app.Config)
}

// GroupPrefix is AUTHZ_GROUP_PREFIX of the consoles StartConsole starts:
// SignIn puts it before every group, so "acme:oncall" gives that role.
const GroupPrefix = "quarantine:"

// Console is a running console (app.New, exactly as `console serve` wires
// it) on an in-process NATS server, with Dex (testidp) to sign
// people in. It stops when the test ends.
type Console struct {
	*app.App
	NATS *natstest.Server
	IdP  *testidp.IdP
	// DB is the test's database (nil with ConsoleOptions.DatabaseURL): the
	// console connects as its runtime role; DB.OwnerPool is the owner, for
	// fixtures that need more.
	DB *testdb.DB
	// Signer signs the console's audit checkpoints.
	Signer *audit.Signer
	users  atomic.Int64
	cfg    app.Config // as app.New was given it, for Replica
	log    io.Writer
}

// PolicyFile is the shipped policy table, dev/policy.toml.
func PolicyFile() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "dev", "policy.toml")
}

// ReplaySubjects are the replay subjects of the consoles tests start
// (REPLAY_SUBJECT_ALLOW), those of the factory's dead letters: the
// original subject app.<tenant>.<item type> of each tenant.
const ReplaySubjects = "app.{tenant}.>"

// RevalidateSubject is REVALIDATE_SUBJECT of the consoles tests start:
// nobody answers on it unless a test does, so revalidate items are
// requested and approved as usual and blocked when published, unless a
// test serves it.
const RevalidateSubject = "test.revalidate"

// StartConsole starts a console for t and waits until it serves.
func StartConsole(t testing.TB, opts ConsoleOptions) *Console {
	t.Helper()
	c := &Console{NATS: natstest.StartWithOptions(t, t.TempDir(), opts.NATS)}
	if opts.DatabaseURL == "" {
		c.DB = testdb.New(t)
		opts.DatabaseURL = c.DB.URL
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	subjects, err := replay.ParseSubjectAllowlist(ReplaySubjects)
	require.NoError(t, err)
	c.IdP = testidp.Start(t)
	idp := c.IdP
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	c.Signer = audit.NewSigner(priv)
	cfg := app.Config{
		Version: "test", Addr: "127.0.0.1:0", DatabaseURL: opts.DatabaseURL, DBWait: 10 * time.Second,
		NATSURL: c.NATS.ClientURL(), Prefix: dlq.DefaultSubjectPrefix, Stream: "DLQ", Replicas: 1,
		BatchSize: 1000, IngestWorkers: 1, BatchWait: 20 * time.Millisecond, AckWait: time.Minute,
		// Every test signs its people in from one address.
		OIDC: authz.OIDCConfig{Issuer: idp.Issuer, ClientID: idp.ClientID, ClientSecret: idp.ClientSecret, GroupsClaim: "groups",
			ExchangeBurst: 100000},
		OIDCWait: 10 * time.Second, IdleTimeout: time.Hour, Lifetime: 12 * time.Hour,
		Groups:      authz.GroupMap{Prefix: GroupPrefix},
		AuditSigner: c.Signer, MetricsAddr: "127.0.0.1:0",
		Replay: app.ReplayConfig{PolicyFile: PolicyFile(), Lease: 30 * time.Second, RevalidateTimeout: 2 * time.Second, Subjects: subjects,
			RevalidateSubject: RevalidateSubject},
	}
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	c.cfg, c.log = cfg, opts.Log
	c.App, err = app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(opts.Log, nil)))
	if err != nil {
		t.Fatalf("start the console: %v", err)
	}
	Serve(t, c.App)
	return c
}

// IdleReplica builds a second console as app.New builds one, on the same
// database, NATS server and identity provider, and serves its web handler
// only: none of its background work runs, its authorization policy
// listener among it (a replica whose listener was lost, or has not heard
// of a change yet). It returns the replica's URL. People signed in on c are
// signed in there too: sessions live in the database, and cookies are
// per host, not per port.
func (c *Console) IdleReplica(t testing.TB) string {
	t.Helper()
	r, err := app.New(context.Background(), c.cfg, slog.New(slog.NewTextHandler(c.log, nil)))
	if err != nil {
		t.Fatalf("build a replica: %v", err)
	}
	srv := httptest.NewServer(r.Handler)
	t.Cleanup(func() {
		srv.Close()
		r.Close()
	})
	return srv.URL
}

// Another builds a second console as app.New builds one, on the same
// database, NATS server and identity provider, with configure's changes to
// c's configuration (a release with another policy file, a wrong
// setting); nothing of it runs. The caller closes it when New did not
// fail.
func (c *Console) Another(configure func(*app.Config)) (*app.App, error) {
	cfg := c.cfg
	configure(&cfg)
	return app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(c.log, nil)))
}

// Serve runs a until the test ends, then stops it (failing the test when
// Run fails or does not return within 30 s) and closes it.
func Serve(t testing.TB, a *app.App) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("console: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the console did not stop within 30 s")
		}
		a.Close()
	})
}

// NoFollow is an HTTP client that keeps cookies in jar and shows
// redirects instead of following them.
func NoFollow(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// SignIn goes through the real sign-in flow as a new person in groups
// (each given GroupPrefix) and returns a client holding their session, and
// who they are.
func (c *Console) SignIn(t testing.TB, groups ...string) (*http.Client, authz.User) {
	t.Helper()
	n := c.users.Add(1)
	return c.SignInAs(t, testidp.Person{ID: fmt.Sprintf("user-%d", n), Email: fmt.Sprintf("user%d@example.com", n), EmailVerified: true}, groups...)
}

// Again is the directory entry of u, who signed in before: SignInAs it
// signs them in again.
func Again(u authz.User) testidp.Person {
	return testidp.Person{ID: testidp.UserID(u.Subject), Email: u.Email, EmailVerified: u.EmailVerified}
}

// SignInAs signs person in (again, for a second session of the same
// person), in groups (each given GroupPrefix), through the console's
// /auth/login and the identity provider's login page.
func (c *Console) SignInAs(t testing.TB, person testidp.Person, groups ...string) (*http.Client, authz.User) {
	t.Helper()
	prefixed := make([]string, len(groups))
	for i, g := range groups {
		prefixed[i] = GroupPrefix + g
	}
	person.Groups = prefixed
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := NoFollow(jar)
	c.SignInWith(t, client, person)
	u := authz.User{Actor: quarantine.Actor{Issuer: c.IdP.Issuer, Subject: c.IdP.Subject(person.ID), Email: person.Email, EmailVerified: person.EmailVerified}, Groups: prefixed}
	return client, u
}

// SignInWith signs person in (their groups as they are) in client's
// browser: the console's /auth/login, the identity provider, the
// console's callback.
func (c *Console) SignInWith(t testing.TB, client *http.Client, person testidp.Person) {
	t.Helper()
	resp, err := client.Get(c.URL() + "/auth/login")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode, "the console sends the browser to the identity provider")
	callback := c.IdP.SignIn(t, client, resp.Header.Get("Location"), person)
	resp, err = client.Get(callback.String())
	require.NoError(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: the console's callback answered %d", resp.StatusCode)
	}
}

// SessionCookie is the session cookie client holds for the console.
func (c *Console) SessionCookie(t testing.TB, client *http.Client) *http.Cookie {
	t.Helper()
	u, err := url.Parse(c.URL())
	require.NoError(t, err)
	for _, ck := range client.Jar.Cookies(u) {
		if ck.Name == authz.SessionCookie {
			return ck
		}
	}
	t.Fatal("no session cookie after sign-in")
	return nil
}

// Response is an answer of the console, its body read.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// Doc parses the body as HTML.
func (r Response) Doc(t testing.TB) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(r.Body))
	require.NoError(t, err)
	return d
}

// Do sends a request as client: a form when form is not nil, with the
// headers a browser sends on a same-origin form post for POSTs, and hdr.
func (c *Console) Do(t testing.TB, client *http.Client, method, path string, form url.Values, hdr map[string]string) Response {
	t.Helper()
	if form == nil {
		return c.send(t, client, method, path, nil, hdr)
	}
	return c.DoForm(t, client, method, path, form.Encode(), hdr)
}

// DoForm is Do with body sent as it is, as an urlencoded form: bytes no
// browser's form encoding would send (a raw ";" or "%", say).
func (c *Console) DoForm(t testing.TB, client *http.Client, method, path, body string, hdr map[string]string) Response {
	t.Helper()
	return c.send(t, client, method, path, strings.NewReader(body), hdr)
}

// send is Do with body (nil: none) as an urlencoded form.
func (c *Console) send(t testing.TB, client *http.Client, method, path string, body io.Reader, hdr map[string]string) Response {
	t.Helper()
	req, err := http.NewRequest(method, c.URL()+path, body)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if method == http.MethodPost {
		req.Header.Set("Origin", c.URL())
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(data)}
}

// AuditCount counts the audit rows where holds.
func (c *Console) AuditCount(t testing.TB, where string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, c.Pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_log WHERE "+where, args...).Scan(&n))
	return n
}

// HoldKeepers keeps every keeper pass off (the console's own skips while
// it is held, as one of another console does) until the returned release
// is called, or the test ends: for a test that seeds dead letters older
// than retention keeps, and makes them part of a request, before a pass
// may remove them.
func (c *Console) HoldKeepers(t testing.TB) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := c.Jobs.Acquire(ctx)
	require.NoError(t, err)
	// Waits for a pass under way to end.
	_, err = conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, dlq.KeeperLockKey)
	require.NoError(t, err)
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, dlq.KeeperLockKey); err != nil {
				t.Errorf("release the keepers' lock: %v", err)
			}
			conn.Release()
		})
	}
	t.Cleanup(release)
	return release
}

// Keeper is a retention keeper as the console's: on its jobs pool, under
// the retention of its replay policy as it is when a pass reads it, signing
// its checkpoints with c.Signer. It takes turns with the console's own
// keeper, which may have run a pass first.
func (c *Console) Keeper() *dlq.Keeper {
	return dlq.NewKeeper(dlq.NewStore(c.Jobs), dlq.KeeperConfig{
		Policy: func() dlq.RetentionPolicy {
			r := c.Replays.Policy().Retention()
			return dlq.Terms{RetentionPolicy: app.RetentionOf(r), Version: replay.RetentionVersion(r)}
		},
		Checkpoint: func(ctx context.Context, tx pgx.Tx, reason string) error {
			_, err := audit.Record(ctx, tx, c.Signer, reason)
			return err
		},
	}, nil, nil)
}
