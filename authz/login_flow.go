package authz

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// A sign-in in progress lives in the browser, not in the database: one
// cookie per flow, named after its state, HttpOnly, SameSite=Lax (the
// provider's redirect back is a top-level GET, which carries it), Secure
// and __Host- prefixed over https, gone after flowTTL. GET /auth/login is
// anonymous, so anything it stored server-side would let a stranger grow
// the sessions table one row per request; nothing is stored until the
// callback succeeds (Callback then creates the session and its
// user_sessions row). The cookie holds nothing a stranger could use: the
// state, nonce and PKCE verifier of a sign-in only its own browser can
// finish, and the provider checks the verifier against the challenge it
// was given.
const (
	loginCookiePrefix       = "quarantine_login_"
	secureLoginCookiePrefix = "__Host-quarantine_login_"
	// maxReturnTo bounds the path a sign-in returns to (a longer one
	// returns to "/"), which keeps the cookie under browsers' 4 KB.
	maxReturnTo = 1024
)

// flow is a sign-in in progress, kept in its cookie under its state.
type flow struct {
	State    string    `json:"state"`
	Nonce    string    `json:"nonce"`
	Verifier string    `json:"verifier"`
	ReturnTo string    `json:"return_to"`
	Started  time.Time `json:"started"`
}

func (l *Login) loginCookiePrefix() string {
	if l.sessions.Cookie.Secure {
		return secureLoginCookiePrefix
	}
	return loginCookiePrefix
}

// startFlow sets f's cookie, and expires the oldest flows of this browser
// beyond maxFlows (several tabs may sign in at once, not without bound).
func (l *Login) startFlow(c echo.Context, f flow) {
	var open []flow
	for _, ck := range c.Request().Cookies() {
		if g, ok := l.readFlow(ck); ok {
			open = append(open, g)
		}
	}
	slices.SortFunc(open, func(a, b flow) int { return b.Started.Compare(a.Started) })
	for _, old := range open[min(len(open), maxFlows-1):] {
		l.setFlowCookie(c, old.State, "", -1)
	}
	raw, _ := json.Marshal(f) // plain strings and a time always marshal
	l.setFlowCookie(c, f.State, base64.RawURLEncoding.EncodeToString(raw), int(flowTTL/time.Second))
}

// takeFlow returns the flow of state from its cookie and expires the
// cookie (one use only); false when the browser has none, or it is broken.
func (l *Login) takeFlow(c echo.Context, state string) (flow, bool) {
	if state == "" {
		return flow{}, false
	}
	ck, err := c.Cookie(l.loginCookiePrefix() + state)
	if err != nil {
		return flow{}, false
	}
	l.setFlowCookie(c, state, "", -1)
	f, ok := l.readFlow(ck)
	return f, ok && f.State == state
}

// readFlow decodes a flow cookie; false for any other cookie or a broken
// value.
func (l *Login) readFlow(ck *http.Cookie) (flow, bool) {
	state, ok := strings.CutPrefix(ck.Name, l.loginCookiePrefix())
	if !ok {
		return flow{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil {
		return flow{}, false
	}
	var f flow
	if json.Unmarshal(raw, &f) != nil || f.State != state {
		return flow{}, false
	}
	return f, true
}

func (l *Login) setFlowCookie(c echo.Context, state, value string, maxAge int) {
	c.SetCookie(&http.Cookie{
		Name: l.loginCookiePrefix() + state, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: l.sessions.Cookie.Secure, SameSite: http.SameSiteLaxMode,
	})
}

// returnTo is where a sign-in started at p comes back to: a local path of
// at most maxReturnTo bytes, else "/".
func returnTo(p string) string {
	if len(p) > maxReturnTo {
		return "/"
	}
	return LocalPath(p)
}
