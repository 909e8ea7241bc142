package authz

import (
	"net/http"
	"time"

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SessionConfig sets the session cookie and timeouts.
type SessionConfig struct {
	Secure      bool          // cookie only over https; set when the console is served over https
	IdleTimeout time.Duration // signed out after this long without a request; default 1h
	Lifetime    time.Duration // signed out this long after login whatever happens; default 12h
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
// over https, with idle and absolute timeouts. Wrap the HTTP handler with its LoadAndSave; call stop at
// shutdown to end the expired-session cleanup.
func NewSessions(pool *pgxpool.Pool, cfg SessionConfig) (_ *scs.SessionManager, stop func()) {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = time.Hour
	}
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = 12 * time.Hour
	}
	s := scs.New()
	store := pgxstore.NewWithCleanupInterval(pool, 10*time.Minute)
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
	return s, store.StopCleanup
}

// Keys of the browser's session. Who is signed in is not among them: the
// session holds the id of a user_sessions row (sessionIDKey), which Current
// reads on every request.
const (
	keyIDToken = "id_token"
	keyLoginAt = "login_at"
)
