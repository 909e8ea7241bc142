package authz

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SessionConfig sets the session cookie and timeouts.
type SessionConfig struct {
	Secure      bool          // cookie only over https; set when the console is served over https
	IdleTimeout time.Duration // signed out after this long without a request; default 1h
	Lifetime    time.Duration // signed out this long after login whatever happens; default 12h
	Log         *slog.Logger  // where the expired-session cleanup reports failures; nil: discarded
}

// Names of the session cookie: over https it carries the __Host- prefix,
// which browsers accept only when Secure, for this host and path "/" (no
// subdomain can set or shadow it).
const (
	SessionCookie       = "quarantine_session"
	SecureSessionCookie = "__Host-quarantine_session"
)

// NewSessions returns a session manager storing sessions in the sessions
// table: HttpOnly, SameSite=Lax, Secure (and named with the __Host- prefix)
// over https, with idle and absolute timeouts. A session is read with the
// sign-in it names in one statement and written only when it changed (see
// sessionStore): wrap the HTTP handler with its LoadAndSave, and that with
// WithSessionReads. Call stop at shutdown to end the expired-session
// cleanup.
func NewSessions(pool *pgxpool.Pool, cfg SessionConfig) (_ *scs.SessionManager, stop func()) {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = time.Hour
	}
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = 12 * time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := scs.New()
	store := &sessionStore{pool: pool, codec: s.Codec, idle: cfg.IdleTimeout, now: time.Now, slack: idleSlack(cfg.IdleTimeout), log: cfg.Log, stop: make(chan struct{})}
	go store.cleanup(10 * time.Minute)
	s.Store = store
	s.IdleTimeout = cfg.IdleTimeout
	s.Lifetime = cfg.Lifetime
	s.Cookie.Name = SessionCookie
	if cfg.Secure {
		s.Cookie.Name = SecureSessionCookie
	}
	s.Cookie.HttpOnly = true
	s.Cookie.SameSite = http.SameSiteLaxMode
	s.Cookie.Secure = cfg.Secure
	s.Cookie.Path = "/"
	var once sync.Once
	return s, func() { once.Do(func() { close(store.stop) }) }
}

// Keys of the browser's session. Who is signed in is not among them: the
// session holds the id of a user_sessions row (sessionIDKey), which Current
// reads on every request.
const (
	keyIDToken = "id_token"
	keyLoginAt = "login_at"
)
