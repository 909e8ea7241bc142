package authz

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// OIDCConfig names the identity provider and this console as its client.
type OIDCConfig struct {
	Issuer       string // OIDC_ISSUER
	ClientID     string // OIDC_CLIENT_ID
	ClientSecret string // OIDC_CLIENT_SECRET
	RedirectURL  string // OIDC_REDIRECT_URL, ending in /auth/callback
	GroupsClaim  string // OIDC_GROUPS_CLAIM; default "groups"
	// PostLogoutURL is where the provider sends the browser after its
	// end-session endpoint (when it has one).
	PostLogoutURL string
	// RefreshInterval is how old the groups of a session may get: after it,
	// the next request reads them again from the provider with the refresh
	// token, and the session ends if that fails or there is none
	// (SESSION_REFRESH_INTERVAL; default 10m).
	RefreshInterval time.Duration
	// ExchangeBurst is how many sign-ins one client address may finish at
	// once, then two a second (exchangeLimits; SIGNIN_BURST, 0: 50).
	ExchangeBurst int
}

// ErrLogin is wrapped by every callback failure; the text after it is a
// sentence for the person signing in.
var ErrLogin = errors.New("sign-in failed")

// flowTTL is how long a started sign-in may take.
const flowTTL = 10 * time.Minute

// maxFlows bounds sign-ins pending in one browser (several tabs).
const maxFlows = 5

// Login runs the OIDC authorization-code flow with PKCE, state and nonce,
// and keeps the result in the server-side session.
type Login struct {
	cfg        OIDCConfig
	oauth      oauth2.Config
	provider   *oidc.Provider
	verifier   *oidc.IDTokenVerifier
	endSession string
	sessions   *scs.SessionManager
	db         *pgxpool.Pool
	directory  *Directory
	denials    *AnonymousDenials
	exchanges  *exchangeLimits
	crossSite  *CrossSiteDenials // told of browser sessions that end here (ForgetEndedIn)
	log        *slog.Logger
	now        func() time.Time
	// claimWait is how long a request waits for another's refresh
	// (settleRefresh): refreshClaim, shorter in tests.
	claimWait time.Duration
}

// RememberIn makes every sign-in and refresh update the directory, in the
// sign-in's or refresh's own transaction on the Login's database (d must
// be on the same one).
func (l *Login) RememberIn(d *Directory) { l.directory = d }

// ForgetEndedIn makes d forget every browser session that ends here
// (CrossSiteDenials.Forget): signed out, replaced by a new sign-in in the
// same browser, ended at a refresh, or found to sign nobody in any more,
// so that d never answers for a session that signs nobody in.
func (l *Login) ForgetEndedIn(d *CrossSiteDenials) { l.crossSite = d }

// forget tells the cross-site memory (ForgetEndedIn) that the browser
// session token ended.
func (l *Login) forget(token string) {
	if l.crossSite != nil && token != "" {
		l.crossSite.Forget(SessionKey(token), time.Now())
	}
}

// signsNobodyIn ends what the browser's session of ctx says of a sign-in
// that ended or expired: it signs nobody in any more.
func (l *Login) signsNobodyIn(ctx context.Context) {
	l.sessions.Remove(ctx, sessionIDKey)
	l.forget(l.sessions.Token(ctx))
}

// CountDenialsIn makes failed anonymous sign-ins count in d (by default in
// a recorder of the Login's own, not registered for metrics).
func (l *Login) CountDenialsIn(d *AnonymousDenials) { l.denials = d }

// refreshTimeout bounds a refresh at the provider, made inside a request.
const refreshTimeout = 10 * time.Second

// NewLogin discovers the provider, waiting up to wait for it to answer.
// Sessions are recorded in db's user_sessions table.
func NewLogin(ctx context.Context, cfg OIDCConfig, wait time.Duration, sessions *scs.SessionManager, db *pgxpool.Pool, log *slog.Logger) (*Login, error) {
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = 10 * time.Minute
	}
	var provider *oidc.Provider
	deadline := time.Now().Add(wait)
	for {
		var err error
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		provider, err = oidc.NewProvider(dctx, cfg.Issuer)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("OIDC_ISSUER %s: discovery failed: %w", cfg.Issuer, err)
		}
		log.Warn("waiting for the identity provider", "issuer", cfg.Issuer, "err", err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
	var extra struct {
		EndSession string   `json:"end_session_endpoint"`
		Scopes     []string `json:"scopes_supported"`
	}
	if err := provider.Claims(&extra); err != nil {
		return nil, fmt.Errorf("OIDC_ISSUER %s: read discovery document: %w", cfg.Issuer, err)
	}
	scopes := []string{oidc.ScopeOpenID, "email", "profile", "groups"}
	if slices.Contains(extra.Scopes, oidc.ScopeOfflineAccess) {
		// A refresh token, so groups can be read again during the session.
		scopes = append(scopes, oidc.ScopeOfflineAccess)
	}
	l := &Login{
		cfg: cfg,
		oauth: oauth2.Config{
			ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: cfg.RedirectURL,
			Endpoint: provider.Endpoint(), Scopes: scopes,
		},
		provider:   provider,
		endSession: extra.EndSession,
		sessions:   sessions,
		db:         db,
		denials:    NewAnonymousDenials(nil, log),
		exchanges:  newExchangeLimits(cfg.ExchangeBurst),
		log:        log,
		now:        time.Now,
		claimWait:  refreshClaim,
	}
	// An ID token's expiry is read on the sign-in's own clock.
	l.verifier = provider.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: func() time.Time { return l.now() }})
	return l, nil
}

// Start begins a sign-in: GET /auth/login?return_to=/path. A browser
// signed in already that something other than the console's own pages
// sent here (StartedOutside: another site's page, a link from a mail or
// a chat, a bookmark) goes to the return path instead (303), and nothing
// starts: such a navigation carries the session cookie (SameSite=Lax),
// and with the provider's single sign-on the callback would come back at
// once, end the person's sign-in, clear their browser's session and sign
// in whoever the provider's session holds, none of it asked for. To sign
// in as someone else, a person signs out first; the console's own pages
// still start a sign-in, and anyone's browser signed in to nobody does.
// The error is for failing to read the session.
func (l *Login) Start(c echo.Context) error {
	back := returnTo(c.QueryParam("return_to"))
	if StartedOutside(c.Request()) {
		_, signedIn, err := l.Current(c.Request().Context())
		if err != nil {
			return err
		}
		if signedIn {
			return c.Redirect(http.StatusSeeOther, back)
		}
	}
	f := flow{State: randomToken(), Nonce: randomToken(), Verifier: oauth2.GenerateVerifier(), ReturnTo: back, Started: l.now()}
	l.startFlow(c, f)
	url := l.oauth.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	return c.Redirect(http.StatusFound, url)
}

// Callback finishes a sign-in: GET /auth/callback?code=...&state=... It
// rejects a missing or unknown state, a state already used (so a replayed
// code fails), a provider error, a code the provider refuses (wrong PKCE
// verifier), and an ID token whose signature, issuer, audience, expiry or
// nonce is wrong. On success the session token is renewed (no fixation).
func (l *Login) Callback(c echo.Context) error {
	ctx := c.Request().Context()
	q := c.Request().URL.Query()
	f, ok := l.takeFlow(c, q.Get("state")) // one use only
	if !ok {
		return l.deny(c, DenialLoginState, "the sign-in state is missing, unknown or already used; start again")
	}
	if l.now().Sub(f.Started) > flowTTL {
		return l.deny(c, DenialLoginFlow, "the sign-in took too long; start again")
	}
	if e := q.Get("error"); e != "" {
		return l.deny(c, DenialLoginIdP, "the identity provider refused: "+clip(e+" "+q.Get("error_description"), 200))
	}
	if f.Verifier == "" {
		return l.deny(c, DenialLoginFlow, "the sign-in has no PKCE verifier; start again")
	}
	if !l.exchanges.Allow(c.RealIP(), l.now()) {
		return l.deny(c, DenialLoginRate, "too many sign-ins from your network address just now; wait a few seconds and sign in again")
	}
	xctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	tok, err := l.oauth.Exchange(xctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		l.log.Warn("code exchange failed", "err", err)
		return l.deny(c, DenialLoginIdP, "the identity provider did not accept the sign-in code")
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		return l.deny(c, DenialLoginToken, "the identity provider returned no ID token")
	}
	idt, err := l.verifier.Verify(ctx, rawID)
	if err != nil {
		l.log.Warn("ID token rejected", "err", err)
		return l.deny(c, DenialLoginToken, "the ID token could not be verified")
	}
	if idt.Nonce != f.Nonce {
		// A token from another sign-in (replayed, or planted by an
		// attacker): nobody signed in here, so it is not audited.
		return l.deny(c, DenialLoginToken, "the ID token does not belong to this sign-in (nonce mismatch)")
	}
	u, err := l.userFrom(idt)
	if err != nil {
		return l.fail(c, idt.Subject, err.Error())
	}
	// A sign-in in a browser still signed in replaces that sign-in: its
	// session ends with the new one's (it would otherwise stay listed, and
	// usable by whoever kept its cookie, until it expired), recorded under
	// the person it signed in (endEarlier).
	earlier, oldToken := l.sessions.GetString(ctx, sessionIDKey), l.sessions.Token(ctx)
	if err := l.sessions.RenewToken(ctx); err != nil {
		return fmt.Errorf("renew session: %w", err)
	}
	l.forget(oldToken) // its row is gone: the old cookie signs nobody in
	// The new sign-in starts with nothing of the browser's session before
	// it (a time zone, messages not yet shown): it may be someone else's.
	if err := l.sessions.Clear(ctx); err != nil {
		return fmt.Errorf("clear session: %w", err)
	}
	// The session, the directory entry and the audit row commit together:
	// nobody is signed in unless the sign-in is in the log.
	id, err := createSession(ctx, l.db, u, tok.RefreshToken, l.sessions.Lifetime, func(tx pgx.Tx) error {
		if l.directory != nil {
			if err := rememberIn(ctx, tx, u); err != nil {
				return err
			}
		}
		reason := ""
		if earlier != "" {
			var err error
			if reason, err = endEarlier(ctx, tx, earlier, u, RequestMeta(c)); err != nil {
				return err
			}
		}
		// The row says what grants the person roles as of this sign-in
		// (groups, email): the directory entry it rewrites is what the
		// approval checks read, and without it a group held for one
		// sign-in would leave no trace.
		e := l.event(c, u.Actor, "auth.login", audit.OutcomeOK, reason)
		e.After = grantsOf(u)
		_, err := audit.Append(ctx, tx, e)
		return err
	})
	if err != nil {
		return fmt.Errorf("sign-in: %w", err)
	}
	l.sessions.Put(ctx, sessionIDKey, id)
	l.sessions.Put(ctx, keyIDToken, rawID)
	l.sessions.Put(ctx, keyLoginAt, l.now().UTC().Format(time.RFC3339))
	// The flow's cookie came from the browser, which need not be the one
	// Start wrote (a sibling host can toss cookies): its return path is
	// judged again, so that a sign-in only ever lands on this site.
	return c.Redirect(http.StatusSeeOther, returnTo(f.ReturnTo))
}

// endEarlier ends the sign-in earlier, which the browser held when u
// signed in in it, in u's sign-in transaction tx, with its
// auth.session_end row under the person it signed in (endSignIn): it may
// be someone else's, whose own history would otherwise show them signed
// in still. It returns what u's auth.login row says of it, "" when it had
// ended already. Another identity's sign-in is named on both rows, each
// row naming the other person, so that either one's history says who took
// the browser over or whose sign-in it ended.
func endEarlier(ctx context.Context, tx pgx.Tx, earlier string, u User, meta quarantine.RequestMeta) (string, error) {
	was, live, err := liveIdentity(ctx, tx, earlier)
	if err != nil || !live {
		return "", err
	}
	why, said := "signed in again in the same browser", "ended the earlier sign-in of this browser"
	if !was.SameIdentity(u.Actor) {
		why = "another identity signed in in the same browser: " + u.Attribution()
		said += ", of another identity: " + was.Attribution()
	}
	_, ended, err := endSignIn(ctx, tx, earlier, why, meta)
	if err != nil || !ended {
		return "", err
	}
	return said, nil
}

func (l *Login) userFrom(idt *oidc.IDToken) (User, error) {
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return User{}, fmt.Errorf("the ID token's claims could not be read")
	}
	return l.userFromClaims(idt.Issuer, idt.Subject, claims)
}

// maxSubject and maxEmail bound the identity a provider may sign in:
// OpenID Connect Core 1.0 (section 2) says a subject never exceeds 255
// ASCII characters, and an address is at most 320 bytes (RFC 5321's
// parts; the audit log keeps no more of one). What the console stores of
// a person (the audit row, who last changed an error group, a revocation's
// reason, their settings) is sized for an identity within them; a longer
// one would be cut in the audit log, where two people must never read as
// one, and refused by the other stores' bounds, so it is not signed in.
const (
	maxSubject = 255
	maxEmail   = 320
)

// userFromClaims reads a person from ID token or userinfo claims; an
// identity past maxSubject or maxEmail is an error that says which.
func (l *Login) userFromClaims(issuer, subject string, claims map[string]any) (User, error) {
	u := User{Actor: quarantine.Actor{Issuer: issuer, Subject: subject}}
	u.Email, _ = claims["email"].(string)
	switch {
	case len(subject) > maxSubject:
		return User{}, fmt.Errorf("the identity provider's subject for this person is %d bytes long, and OpenID Connect allows at most %d: ask its administrators to shorten it", len(subject), maxSubject)
	case len(u.Email) > maxEmail:
		return User{}, fmt.Errorf("the identity provider's email address for this person is %d bytes long, and an address is at most %d: ask its administrators to correct it", len(u.Email), maxEmail)
	}
	switch v := claims["email_verified"].(type) {
	case bool:
		u.EmailVerified = v
	case string:
		// Some providers (Amazon Cognito among them) send the claim as the
		// string "true": taken as the boolean it spells, not as
		// unverified, which would keep the address from tying the
		// person's identities together (SamePerson).
		u.EmailVerified = v == "true"
	}
	u.Name, _ = claims["name"].(string)
	if u.Name == "" {
		u.Name, _ = claims["preferred_username"].(string)
	}
	switch g := claims[l.cfg.GroupsClaim].(type) {
	case []any:
		for _, v := range g {
			if s, ok := v.(string); ok {
				u.Groups = append(u.Groups, s)
			}
		}
	case string:
		// One string is one group, commas and all: some providers send a
		// person's only group as a string, and a group name may be chosen
		// by its members, so "book club,quarantine:acme:admin" split on
		// its comma would hand out a prefixed role nobody granted.
		if g != "" {
			u.Groups = []string{g}
		}
	}
	return u, nil
}

// Logout ends the session: POST /auth/logout. The session's record ends
// in one transaction with its audit row (auth.logout); then the browser's
// session is destroyed. It goes to the provider's end-session endpoint
// when it has one, else to signedOut.
//
// A sign-out whose session already ended (a page left open past the idle
// timeout, a sign-in past its lifetime or ended elsewhere) is a sign-out
// still: what is left of it ends (leftOf: the expired row, the sign-in it
// named), the cookie is cleared, and the browser goes where a sign-out
// goes, so that the provider's session the person meant to end is ended
// too. Nobody is signed in then, so no auth.logout row is written; the
// sign-in that ended is recorded as the cleanup would have recorded it,
// with its auth.session_end row under the person it signed in.
func (l *Login) Logout(c echo.Context, signedOut string) error {
	ctx := c.Request().Context()
	u, ok, err := l.Current(ctx)
	if err != nil {
		return err
	}
	idToken, token := l.sessions.GetString(ctx, keyIDToken), l.sessions.Token(ctx)
	if token == "" {
		if idToken, err = l.leftOf(c); err != nil {
			return err
		}
	}
	if id := l.sessions.GetString(ctx, sessionIDKey); id != "" {
		err := pgx.BeginFunc(ctx, l.db, func(tx pgx.Tx) error {
			if _, err := endUserSession(ctx, tx, id, "signed out"); err != nil {
				return err
			}
			if !ok {
				return nil
			}
			_, err := audit.Append(ctx, tx, l.event(c, u.Actor, "auth.logout", audit.OutcomeOK, ""))
			return err
		})
		if err != nil {
			return fmt.Errorf("sign out: %w", err)
		}
	}
	l.forget(token)
	if err := l.sessions.Destroy(ctx); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	if l.endSession != "" {
		v := url.Values{"client_id": {l.cfg.ClientID}}
		if idToken != "" {
			v.Set("id_token_hint", idToken)
		}
		if l.cfg.PostLogoutURL != "" {
			v.Set("post_logout_redirect_uri", l.cfg.PostLogoutURL)
		}
		return c.Redirect(http.StatusSeeOther, l.endSession+"?"+v.Encode())
	}
	return c.Redirect(http.StatusSeeOther, signedOut)
}

// Removes the row of a browser session whose idle deadline passed (its
// expiry, or this replica's idle timeout $1 since idle_from, as the
// session manager found it ended: sessionEnded), before the cleanup does;
// a live one is not touched from here (only its own Logout, through the
// session manager, ends it).
const deleteEndedSession = `DELETE FROM sessions s WHERE s.token = $2
    AND ` + sessionEnded + ` -- a live session is ended by its own sign-out only
RETURNING data, user_session`

// leftOf ends what is left of the browser session whose cookie c's request
// carries when the session manager found none for it (its idle deadline
// passed): its row goes, and the sign-in it named ends ("signed out after
// the session expired", with its auth.session_end row: endSignIn), so
// that the admins' Sessions page no longer counts it. It returns the ID
// token that session kept ("" when there is none), the end-session
// endpoint's hint of whom to sign out.
func (l *Login) leftOf(c echo.Context) (idToken string, err error) {
	ck, err := c.Cookie(l.sessions.Cookie.Name)
	if err != nil || ck.Value == "" {
		return "", nil
	}
	ctx := c.Request().Context()
	l.forget(ck.Value)
	err = pgx.BeginFunc(ctx, l.db, func(tx pgx.Tx) error {
		var data []byte
		var id *string
		err := tx.QueryRow(ctx, deleteEndedSession, idleInterval(l.sessions.IdleTimeout), ck.Value).Scan(&data, &id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // gone already, or no session's
		}
		if err != nil {
			return err
		}
		if _, values, err := l.sessions.Codec.Decode(data); err == nil { // a row that does not decode gives no hint
			idToken, _ = values[keyIDToken].(string)
		}
		if id == nil {
			return nil
		}
		// The cleanup would have written the end of this sign-in
		// (removeExpired); it will not find it now, so it is written here.
		_, _, err = endSignIn(ctx, tx, *id, "signed out after the session expired", RequestMeta(c))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("sign out of an ended session: %w", err)
	}
	return idToken, nil
}

// deny refuses a sign-in attempt of someone not identified (yet): it is
// counted and logged (AnonymousDenials), not audited, and returns an error
// wrapping ErrLogin.
func (l *Login) deny(c echo.Context, kind, reason string) error {
	l.denials.Record(c.Request(), kind, reason, c.Response().Header().Get(echo.HeaderXRequestID))
	return fmt.Errorf("%w: %s", ErrLogin, reason)
}

// fail audits a failed sign-in of a person the provider identified and
// returns an error wrapping ErrLogin.
func (l *Login) fail(c echo.Context, subject, reason string) error {
	actor := quarantine.Actor{Issuer: l.cfg.Issuer, Subject: subject}
	if _, err := audit.AppendFunc(c.Request().Context(), l.db, l.event(c, actor, "auth.login", audit.OutcomeError, reason)); err != nil {
		return fmt.Errorf("audit failed login: %w", err)
	}
	return fmt.Errorf("%w: %s", ErrLogin, reason)
}

func (l *Login) event(c echo.Context, actor quarantine.Actor, action string, outcome audit.Outcome, reason string) audit.Event {
	e := audit.NewEvent(actor, RequestMeta(c), action)
	e.Outcome, e.Reason, e.ObjectType = outcome, reason, "session"
	return e
}

// RequestMeta is where the request of c came from, as audit rows record it:
// its X-Request-ID, the client address and the user agent.
func RequestMeta(c echo.Context) quarantine.RequestMeta {
	return quarantine.RequestMeta{
		RequestID: c.Response().Header().Get(echo.HeaderXRequestID), RemoteAddr: c.RealIP(), UserAgent: c.Request().UserAgent(),
	}
}

// LocalPath returns p when it is a path on this site, else "/": a sign-in
// never redirects to another origin.
func LocalPath(p string) string {
	if p == "" || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return p
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return base64.RawURLEncoding.EncodeToString(b)
}
