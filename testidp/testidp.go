// Package testidp runs Dex, the identity provider `make run` and the e2e
// tests use, in process for Go tests, as natstest runs the NATS server: the
// real authorization endpoint, login page, code exchange with PKCE, signed
// ID tokens, JWKS and refresh, on 127.0.0.1, stopped when the test ends.
//
// The people it signs in come from a directory the test fills (Dex's
// upstream, as LDAP or GitHub would be in a deployment): a directory can
// hold what Dex's own password database cannot, and the identity tests need
// it: two people with one email address, an email the directory has not
// verified, a person without an email address. Dex puts them in its tokens
// as it would anyone's: the sub claim is Dex's encoding of the directory's
// user id and the connector's (Subject), and the email, email_verified and
// groups claims are the person's.
package testidp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	gosundheit "github.com/AppsFlyer/go-sundheit"
	"github.com/dexidp/dex/connector"
	"github.com/dexidp/dex/server"
	"github.com/dexidp/dex/server/signer"
	"github.com/dexidp/dex/storage"
	"github.com/dexidp/dex/storage/memory"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/encoding/protowire"
)

// ConnectorID is the id of the directory's connector in Dex: the second
// half of every sub claim.
const ConnectorID = "directory"

// connectorType is the directory's connector type, registered with Dex.
const connectorType = "quarantine-test-directory"

// Person is someone in the directory.
type Person struct {
	// ID is the directory's user id: encoded by Dex with ConnectorID, the
	// sub claim (see Subject).
	ID string
	// Login is the name they sign in with, and what the directory looks up
	// at a refresh; empty, it is ID. Two entries one after the other under
	// one Login are an account removed and made again: a refresh of the
	// first one's sign-in finds the second.
	Login string
	// Email is the email claim; empty, the token has none.
	Email         string
	EmailVerified bool
	// Name is the name claim; empty, the token has none.
	Name string
	// Groups is the groups claim, as it is.
	Groups []string
}

// IdP is a running Dex.
type IdP struct {
	// Issuer, ClientID and ClientSecret are what a console is configured
	// with (OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET).
	Issuer, ClientID, ClientSecret string

	dir     *directory
	storage storage.Storage
	handler http.Handler
	addr    string
	mu      sync.Mutex
	wrap    func(http.Handler) http.Handler
}

// Start starts an identity provider on a free port of 127.0.0.1.
func Start(t testing.TB) *IdP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("identity provider: listen: %v", err)
	}
	p := New(t, ln.Addr().String())
	p.serve(t, ln)
	return p
}

// New builds an identity provider whose issuer is at addr (host:port of
// 127.0.0.1) without listening yet: Listen starts it there, for tests of
// what a console does while its provider is not up.
func New(t testing.TB, addr string) *IdP {
	t.Helper()
	registerOnce.Do(func() {
		server.ConnectorsConfig[connectorType] = func() server.ConnectorConfig { return new(directoryConfig) }
	})
	p := &IdP{
		Issuer: "http://" + addr + "/dex", ClientID: "quarantine-console", ClientSecret: randomString(),
		dir: &directory{password: randomString(), people: map[string]Person{}}, addr: addr,
	}
	key := randomString()
	directories.Store(key, p.dir)
	t.Cleanup(func() { directories.Delete(key) })

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, err := json.Marshal(directoryConfig{Directory: key})
	if err != nil {
		t.Fatal(err)
	}
	p.storage = storage.WithStaticConnectors(memory.New(log), []storage.Connector{{ID: ConnectorID, Type: connectorType, Name: "Directory", Config: cfg}})
	// Any loopback callback is taken: tests start consoles on ports chosen
	// when they listen (see registerCallbacks).
	if err := p.storage.CreateClient(ctx, storage.Client{ID: p.ClientID, Secret: p.ClientSecret, Name: "Quarantine"}); err != nil {
		t.Fatalf("identity provider: client: %v", err)
	}
	now := func() time.Time { return time.Now().UTC() }
	sig, err := (&signer.LocalConfig{KeysRotationPeriod: "6h"}).Open(ctx, p.storage, 24*time.Hour, now, log)
	if err != nil {
		t.Fatalf("identity provider: signer: %v", err)
	}
	refresh, err := server.NewRefreshTokenPolicy(log, true, "", "", "") // Dex's defaults: rotated, no expiry
	if err != nil {
		t.Fatalf("identity provider: refresh tokens: %v", err)
	}
	dex, err := server.NewServer(ctx, server.Config{
		RefreshTokenPolicy: refresh,
		Issuer:             p.Issuer, Storage: p.storage, Signer: sig, Logger: log, Now: now,
		SkipApprovalScreen: true,
		AllowedGrantTypes:  []string{"authorization_code", "refresh_token"},
		Web:                server.WebConfig{Issuer: "Quarantine test directory"},
		PrometheusRegistry: prometheus.NewRegistry(), HealthChecker: gosundheit.New(),
	})
	if err != nil {
		t.Fatalf("identity provider: start Dex: %v", err)
	}
	p.handler = dex
	return p
}

// Use puts mw in front of the provider, from its next request on: what
// happens elsewhere while it is being asked, say.
func (p *IdP) Use(mw func(http.Handler) http.Handler) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wrap = mw
}

// TokenPath is the path of the token endpoint (code exchange and refresh).
func (p *IdP) TokenPath() string { return "/dex/token" }

// Listen starts serving at the address New was given; the test stops it.
func (p *IdP) Listen(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("identity provider: listen: %v", err)
	}
	p.serve(t, ln)
}

func (p *IdP) serve(t testing.TB, ln net.Listener) {
	dex := p.registerCallbacks(p.handler)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		wrap := p.wrap
		p.mu.Unlock()
		if wrap == nil {
			dex.ServeHTTP(w, r)
			return
		}
		wrap(dex).ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// registerCallbacks registers the redirect_uri of an authorization request
// with the client when it is a loopback URL, as whoever deploys a console
// registers its callback: the consoles tests start listen on ports chosen
// then. Dex still checks the code exchange's redirect_uri against it.
func (p *IdP) registerCallbacks(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dex/auth" {
			client := r.URL.Query().Get("client_id") // the console's, or one AddClient made
			if cb, err := url.Parse(r.URL.Query().Get("redirect_uri")); err == nil && cb.Scheme == "http" && isLoopback(cb.Hostname()) {
				err := p.storage.UpdateClient(r.Context(), client, func(c storage.Client) (storage.Client, error) {
					for _, u := range c.RedirectURIs {
						if u == cb.String() {
							return c, nil
						}
					}
					c.RedirectURIs = append(c.RedirectURIs, cb.String())
					return c, nil
				})
				if err != nil && !errors.Is(err, storage.ErrNotFound) { // an unknown client: Dex answers it
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// AddClient registers another application with the provider, as id with
// secret: its tokens are signed by the same keys as the console's, for
// another audience.
func (p *IdP) AddClient(t testing.TB, id, secret string) {
	t.Helper()
	if err := p.storage.CreateClient(context.Background(), storage.Client{ID: id, Secret: secret, Name: id}); err != nil {
		t.Fatalf("identity provider: client %s: %v", id, err)
	}
}

// Add puts person in the directory, in place of whoever had their Login:
// a refresh of their sign-in reads them as they are now.
func (p *IdP) Add(person Person) {
	p.dir.mu.Lock()
	defer p.dir.mu.Unlock()
	person.Groups = append([]string(nil), person.Groups...)
	p.dir.people[person.login()] = person
}

// Remove takes the person who signs in as login out of the directory:
// their refreshes fail.
func (p *IdP) Remove(login string) {
	p.dir.mu.Lock()
	defer p.dir.mu.Unlock()
	delete(p.dir.people, login)
}

func (p Person) login() string {
	if p.Login != "" {
		return p.Login
	}
	return p.ID
}

// Subject is the sub claim Dex gives the person with id: its encoding of
// the user id and ConnectorID.
func (p *IdP) Subject(id string) string { return Subject(id) }

// Subject is the sub claim Dex gives the directory's person with id.
func Subject(id string) string {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, id)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, ConnectorID)
	return base64.RawURLEncoding.EncodeToString(b)
}

// UserID is the directory's user id in the sub claim sub (Subject's
// inverse), or sub itself when Dex did not encode it.
func UserID(sub string) string {
	b, err := base64.RawURLEncoding.DecodeString(sub)
	if err != nil {
		return sub
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return sub
	}
	id, m := protowire.ConsumeString(b[n:])
	if m < 0 || Subject(id) != sub {
		return sub
	}
	return id
}

// SignIn adds person to the directory and signs them in at the
// authorization URL authURL (where a console's /auth/login sent client) as
// a browser would: Dex's login page, filled in and sent, and its redirects.
// It returns the URL Dex sends the browser back to (the console's callback,
// with the code), not yet followed.
func (p *IdP) SignIn(t testing.TB, client *http.Client, authURL string, person Person) *url.URL {
	t.Helper()
	p.Add(person)
	next, err := url.Parse(authURL)
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	issuer, _ := url.Parse(p.Issuer)
	for range 8 {
		if next.Host != issuer.Host || !strings.HasPrefix(next.Path, issuer.Path+"/") {
			return next
		}
		resp, err := noFollow(client).Get(next.String())
		if err != nil {
			t.Fatalf("sign-in at %s: %v", next, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && strings.Contains(string(body), `name="password"`) {
			// Dex's login page posts to where it was read from.
			resp, err = noFollow(client).PostForm(next.String(), url.Values{"login": {person.login()}, "password": {p.dir.password}})
			if err != nil {
				t.Fatalf("sign-in: send the login form: %v", err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		loc := resp.Header.Get("Location")
		if resp.StatusCode < 300 || resp.StatusCode > 399 || loc == "" {
			t.Fatalf("sign-in stopped at %s with %d: %s", next, resp.StatusCode, body)
		}
		if next, err = next.Parse(loc); err != nil {
			t.Fatalf("sign-in: %v", err)
		}
	}
	t.Fatalf("sign-in: no way back from the identity provider after %s", next)
	return nil
}

// noFollow is client, keeping its cookies, showing redirects instead of
// following them.
func noFollow(client *http.Client) *http.Client {
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var (
	registerOnce sync.Once
	directories  sync.Map // key -> *directory
)

// directory is the people an IdP signs in, behind Dex's connector.
type directory struct {
	password string
	mu       sync.Mutex
	people   map[string]Person // by Login
}

func (d *directory) identity(login string) (connector.Identity, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.people[login]
	if !ok {
		return connector.Identity{}, false
	}
	// The login is kept as the connector's data, for the refresh: the
	// name claims say only what the directory says.
	return connector.Identity{UserID: p.ID, Username: p.Name, Email: p.Email, EmailVerified: p.EmailVerified,
		Groups: append([]string(nil), p.Groups...), ConnectorData: []byte(login)}, true
}

// directoryConfig is the connector's configuration in Dex's storage.
type directoryConfig struct {
	Directory string `json:"directory"`
}

// Open is Dex opening the connector.
func (c *directoryConfig) Open(string, *slog.Logger) (connector.Connector, error) {
	d, ok := directories.Load(c.Directory)
	if !ok {
		return nil, fmt.Errorf("no directory %q", c.Directory)
	}
	return directoryConnector{d.(*directory)}, nil
}

// directoryConnector is a password connector (Dex shows its login page)
// that refreshes.
type directoryConnector struct{ d *directory }

func (directoryConnector) Prompt() string { return "User id" }

func (c directoryConnector) Login(_ context.Context, _ connector.Scopes, username, password string) (connector.Identity, bool, error) {
	id, ok := c.d.identity(username)
	if !ok || password != c.d.password {
		return connector.Identity{}, false, nil
	}
	return id, true, nil
}

func (c directoryConnector) Refresh(_ context.Context, _ connector.Scopes, old connector.Identity) (connector.Identity, error) {
	id, ok := c.d.identity(string(old.ConnectorData))
	if !ok {
		return connector.Identity{}, errors.New("no longer in the directory")
	}
	return id, nil
}
