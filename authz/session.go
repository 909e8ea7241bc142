package authz

import (
	"context"
	"encoding/json"
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

// SessionCookie is the name of the session cookie.
const SessionCookie = "quarantine_session"

// NewSessions returns a session manager storing sessions in the sessions
// table: HttpOnly, SameSite=Lax, Secure over https, with idle and absolute
// timeouts. Wrap the HTTP handler with its LoadAndSave; call stop at
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
	s.Cookie.HttpOnly = true
	s.Cookie.SameSite = http.SameSiteLaxMode
	s.Cookie.Secure = cfg.Secure
	s.Cookie.Path = "/"
	return s, store.StopCleanup
}

const (
	keyUser    = "user"
	keyIDToken = "id_token"
	keyLoginAt = "login_at"
	keyFlows   = "oidc_flows"
)

// CurrentUser returns the signed-in user of the request's session.
func CurrentUser(sessions *scs.SessionManager, ctx context.Context) (User, bool) {
	raw := sessions.GetString(ctx, keyUser)
	if raw == "" {
		return User{}, false
	}
	var u User
	if err := json.Unmarshal([]byte(raw), &u); err != nil || u.Subject == "" {
		return User{}, false
	}
	return u, true
}
