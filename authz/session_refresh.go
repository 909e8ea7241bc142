package authz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"
)

// Current returns the person signed in on the request's session, reading
// the session's record (user_sessions) on every call, so a session an admin
// revoked or that expired is signed out at once. When the groups are older
// than the refresh interval, one request reads them again from the provider
// with the refresh token; if that fails (or there is no refresh token), the
// session ends (audited as "auth.session_end") and Current reports nobody.
// When the provider refused the person (it answered the refresh with an
// OAuth error, or with a token that does not verify or names someone
// else), their directory entry is also marked revoked in the same
// transaction, so what they requested or approved is not published while
// nobody is signed in (Authority), and their other sessions are made due
// for a refresh. An OAuth error refusing a session's refresh token while
// the person has a newer live sign-in is no refusal of the person (a
// provider keeping one refresh token per person drops the older one): that
// session ends alone (endAtRefresh), and the same request then asks the
// provider about the person at once through the newest session's token
// (refreshNewest), which revokes them if the provider refuses it too. A
// session an admin revoked while it was being refreshed stays ended, and
// the refresh changes nothing (storeRefreshed). The error is for failing
// to read the database.
//
// The refresh, once claimed, runs to its end whatever becomes of the
// request that claimed it (its client may go away): a refresh cut short
// would leave the session live with the groups of before, and could lose a
// refresh token the provider rotated. Requests that find another one
// refreshing keep the identity they read only while the groups are at most
// refreshClaim past due (settleRefresh).
func (l *Login) Current(ctx context.Context) (User, bool, error) {
	id := l.sessions.GetString(ctx, sessionIDKey)
	if id == "" {
		return User{}, false, nil
	}
	s, read := loadedUserSession(ctx, id) // read with the browser's session, most often
	var err error
	if !read {
		s, err = loadSession(ctx, l.db, id)
	}
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && (s.Ended || !s.at(l.now()).Before(s.ExpiresAt))) {
		return l.over(ctx, s, err == nil)
	}
	if err != nil {
		return User{}, false, fmt.Errorf("read session: %w", err)
	}
	if s.at(l.now()).Sub(s.RefreshedAt) < l.cfg.RefreshInterval {
		return s.User, true, nil
	}
	// From the claim on, the request's cancellation no longer stops
	// anything: a claim taken is a refresh completed (or the session ended).
	bg := context.WithoutCancel(ctx)
	mine, err := claimSessionRefresh(bg, l.db, id, l.cfg.RefreshInterval)
	if err != nil {
		return User{}, false, err
	}
	if !mine {
		return l.settleRefresh(ctx, id)
	}
	return l.refreshNow(ctx, s)
}

// over answers a request whose browser session names sign-in s, found
// ended, past its lifetime, or gone (found false): nobody is signed in.
// One past its lifetime and not ended yet is ended here (endPastLifetime)
// before the browser's session stops naming it: the cleanup ends only the
// sign-ins its removed browser sessions name (endIdleSignIns), so once
// this browser's session named none, nothing would ever end it, and it
// would keep its refresh token, unrecorded, until deleteExpiredSessions
// removed the row a day later. The browser's deadline is set on the
// console's clock and the sign-in's on the database's, so the browser
// session can outlive the sign-in. The error is for failing to record its
// end; the browser's session then still names it, and the next request
// tries again.
func (l *Login) over(ctx context.Context, s userSession, found bool) (User, bool, error) {
	if found && !s.Ended {
		if err := endPastLifetime(ctx, l.db, s.ID); err != nil {
			return User{}, false, err
		}
	}
	l.signsNobodyIn(ctx)
	return User{}, false, nil
}

// refreshNow refreshes session s, which this request claimed, and ends it
// when the refresh fails. ctx is the request's: only the browser's session
// is changed with it. When s ended because a newer sign-in of the person
// holds the refresh token the provider honours, refreshNow then asks the
// provider about the person through that token (refreshNewest).
func (l *Login) refreshNow(ctx context.Context, s userSession) (User, bool, error) {
	bg := context.WithoutCancel(ctx)
	u, ok, superseded, err := l.refreshOrEnd(bg, s)
	if err != nil {
		return User{}, false, err
	}
	if ok {
		return u, true, nil
	}
	l.signsNobodyIn(ctx) // ended here, or revoked or signed out meanwhile and audited then
	if superseded {
		l.refreshNewest(bg, s.User)
	}
	return User{}, false, nil
}

// refreshOrEnd refreshes session s, which its caller claimed, and ends it
// when the refresh fails (endAtRefresh). ok says s is signed in with u;
// superseded, that s ended because the provider refused its refresh token
// while a newer sign-in of the person holds one. The error is for failing
// to record the end.
func (l *Login) refreshOrEnd(ctx context.Context, s userSession) (u User, ok, superseded bool, err error) {
	u, end := l.refresh(ctx, s)
	if end.ended {
		return User{}, false, false, nil
	}
	if end.reason == "" {
		return u, true, false, nil
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	reason, revoked, superseded, err := endAtRefresh(sctx, l.db, s, end)
	if err != nil {
		return User{}, false, false, err
	}
	l.log.Info("session ended at refresh", "issuer", s.User.Issuer, "subject", s.User.Subject, "reason", reason, "directory_revoked", revoked)
	return User{}, false, superseded, nil
}

// refreshNewest refreshes the newest live session of person p, as a
// request of that session would (claimSessionRefresh, then refreshOrEnd),
// right after an older session of theirs ended because the provider
// refused its refresh token while that newer sign-in holds one. The
// provider gives that refusal to a person it removed too, and only the
// token it honours tells the two apart. Made due and left there, the newer
// session would ask only at its own next request, which a phone left idle
// never makes, and the directory entry would go on vouching for a removed
// person to the replay worker for up to its MaxAge
// (TestRevGov20RemovedPersonKeepsAuthorityThroughIdleNewerSession). So the
// provider is asked at once: its answer is stored like any refresh; its
// refusal ends the newest session and, no newer sign-in holding a token,
// revokes the person (endAtRefresh), each in its own transaction. When
// another request holds the newest session's claim, or it is not due
// (refreshed meanwhile), its refresh is left to that request. Only the
// newest session is asked, once: a refusal of it superseded in turn (the
// person signed in again meanwhile) is not followed further, that sign-in
// being fresh. A failure to read or record is logged and changes nothing
// more: the newest session stays due, and its next request asks.
func (l *Login) refreshNewest(ctx context.Context, p User) {
	fail := func(err error) {
		l.log.Error("refresh the newest session after an older one's was refused", "issuer", p.Issuer, "subject", p.Subject, "err", err)
	}
	id, found, err := newestSignIn(ctx, l.db, p.Issuer, p.Subject)
	if err != nil {
		fail(err)
		return
	}
	if !found { // signed out or revoked meanwhile: no token left to ask with
		return
	}
	mine, err := claimSessionRefresh(ctx, l.db, id, l.cfg.RefreshInterval)
	if err != nil {
		fail(err)
		return
	}
	if !mine { // another request refreshes it, or has just done so
		return
	}
	// Read after the claim: the refresh token is the one no other request
	// can spend now.
	s, err := loadSession(ctx, l.db, id)
	if err != nil {
		fail(fmt.Errorf("read session: %w", err))
		return
	}
	if _, _, _, err := l.refreshOrEnd(ctx, s); err != nil {
		fail(err)
	}
}

// settleRefresh answers a request that found the refresh of session id due
// and claimed by another request, or done meanwhile. While
// the groups are at most refreshClaim past due, a refresh in progress may
// still be on its way, and the request keeps the identity it read. Past
// that, the identity it read is not served: the request waits, reading the
// session again every refreshPoll, until the refresh is done (the new
// identity), the session ended (nobody), or the claim lapsed (its holder
// died: this request refreshes). After refreshClaim of waiting, or when
// the request is cancelled, nobody is signed in on this request (the
// browser's session is kept: a later request finds the refresh done).
func (l *Login) settleRefresh(ctx context.Context, id string) (User, bool, error) {
	deadline := time.Now().Add(l.claimWait)
	for {
		s, err := loadSession(ctx, l.db, id)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && (s.Ended || !s.at(l.now()).Before(s.ExpiresAt))) {
			return l.over(ctx, s, err == nil)
		}
		if err != nil {
			return User{}, false, fmt.Errorf("read session: %w", err)
		}
		due := s.at(l.now()).Sub(s.RefreshedAt) - l.cfg.RefreshInterval
		if due < refreshClaim { // refreshed meanwhile, or being refreshed within the claim
			return s.User, true, nil
		}
		mine, err := claimSessionRefresh(context.WithoutCancel(ctx), l.db, id, l.cfg.RefreshInterval)
		if err != nil {
			return User{}, false, err
		}
		if mine {
			return l.refreshNow(ctx, s)
		}
		if !time.Now().Before(deadline) {
			l.log.Warn("session refresh still claimed: request signed out", "issuer", s.User.Issuer, "subject", s.User.Subject)
			return User{}, false, nil
		}
		select {
		case <-ctx.Done():
			return User{}, false, nil
		case <-time.After(refreshPoll):
		}
	}
}

// How long a claim on a refresh lasts, how long the database may take to
// store its outcome, and how often a request waiting on another's refresh
// reads the session again. A claim outlasts what its holder may take
// (refreshTimeout at the provider, then storeTimeout twice: the store
// failing, then the end), so a live holder always finishes within it.
const (
	refreshClaim = 30 * time.Second
	storeTimeout = 5 * time.Second
	refreshPoll  = 250 * time.Millisecond
)

// refreshEnd is why a refresh ends a session: the reason, and whether the
// provider refused the person (rather than the refresh being impossible or
// failing on our side or on the way); or that the session ended while the
// provider was being asked (ended: nothing more to record). tokenRefused
// says the refusal was the provider's error answer to the refresh token,
// which a provider that keeps one refresh token per person and client
// also gives a session whose token a newer sign-in replaced (endAtRefresh
// tells the two apart).
type refreshEnd struct {
	reason       string
	refused      bool
	tokenRefused bool
	ended        bool
}

// refresh reads the person again from the provider (within
// refreshTimeout) and stores what it said (within storeTimeout). It returns
// the new identity, or why the session must end. ctx must not end with a
// request: a refresh token spent at the provider must be followed by the
// one it gave being stored.
func (l *Login) refresh(ctx context.Context, s userSession) (User, refreshEnd) {
	if s.RefreshToken == nil {
		return User{}, refreshEnd{reason: "the identity provider gave no refresh token, so the groups cannot be read again; sign in again"}
	}
	pctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	tok, err := l.oauth.TokenSource(pctx, &oauth2.Token{RefreshToken: *s.RefreshToken}).Token()
	if err != nil {
		// Only the provider's own OAuth error answer about the grant
		// refuses the person (refusesPerson). Any other failure says
		// nothing about them: a network error, a timeout, an answer
		// without an OAuth error, such as the 503 page of a proxy in front
		// of an unreachable provider, which oauth2 reports as a
		// *RetrieveError too (TestRevGov20ProviderOutageRevokesThePerson),
		// or an error about the console itself (a client secret rotated at
		// the provider: TestRefreshRefusingTheConsoleRevokesNobody). The
		// session ends either way: its groups are due and cannot be read.
		var answered *oauth2.RetrieveError
		if errors.As(err, &answered) && refusesPerson(answered.ErrorCode) {
			l.log.Warn("session refresh refused", "subject", s.User.Subject, "err", err)
			return User{}, refreshEnd{reason: "the identity provider did not refresh the sign-in", refused: true, tokenRefused: true}
		}
		if answered != nil && answered.ErrorCode != "" {
			l.log.Error("session refresh failed: the identity provider refused the console's own request; check the OIDC client settings",
				"subject", s.User.Subject, "code", answered.ErrorCode, "err", err)
			return User{}, refreshEnd{reason: "the identity provider refused the console's request to refresh the sign-in"}
		}
		l.log.Warn("session refresh failed: the identity provider could not be asked", "subject", s.User.Subject, "err", err)
		return User{}, refreshEnd{reason: "the identity provider could not be asked to refresh the sign-in"}
	}
	// Its own time: the provider's signing keys may have to be fetched
	// (a key rotated), and a slow token answer must not leave none.
	vctx, cancelVerify := context.WithTimeout(ctx, refreshTimeout)
	defer cancelVerify()
	u, err := l.refreshedIdentity(vctx, tok, s.User.Issuer)
	if err != nil {
		// Not a refusal of the person: a key set that could not be
		// fetched, a userinfo endpoint behind a failing proxy or a time
		// run out fail here alike, and go-oidc gives them no type to
		// tell from a bad signature. The session ends (its groups are
		// due and unread); the person is not revoked (their approvals
		// voided, their jobs blocked for good) for the provider's
		// hiccup. A refresh as someone else still revokes, below.
		l.log.Warn("session refresh unreadable", "subject", s.User.Subject, "err", err)
		return User{}, refreshEnd{reason: "the identity provider's answer to the refresh could not be verified"}
	}
	if !u.SameIdentity(s.User.Actor) { // the same identity; another one with the same email is someone else
		return User{}, refreshEnd{reason: "the identity provider refreshed the sign-in as someone else", refused: true}
	}
	sctx, cancelStore := context.WithTimeout(ctx, storeTimeout)
	defer cancelStore()
	err = storeRefreshed(sctx, l.db, s.ID, s.User, u, tok.RefreshToken, l.directory != nil)
	if errors.Is(err, errSessionEnded) {
		return User{}, refreshEnd{ended: true}
	}
	if err != nil {
		l.log.Error("store refreshed session", "err", err)
		return User{}, refreshEnd{reason: "the refreshed sign-in could not be stored"}
	}
	return u, refreshEnd{}
}

// refusesPerson reports whether an OAuth error answer to a refresh (RFC
// 6749 section 5.2) is the provider refusing the person's grant:
// invalid_grant (revoked, expired, the person removed), and invalid_request,
// which Dex answers when its connector refuses to refresh a person it no
// longer knows. The others are about the console (invalid_client,
// unauthorized_client, unsupported_grant_type, invalid_scope: its
// configuration) or the provider (server_error, temporarily_unavailable),
// not the person.
func refusesPerson(code string) bool {
	return code == "invalid_grant" || code == "invalid_request"
}

// refreshedIdentity reads the person from a refresh response: its ID token
// when it has one (verified like at sign-in, without a nonce), else the
// userinfo endpoint.
func (l *Login) refreshedIdentity(ctx context.Context, tok *oauth2.Token, issuer string) (User, error) {
	if rawID, _ := tok.Extra("id_token").(string); rawID != "" {
		idt, err := l.verifier.Verify(ctx, rawID)
		if err != nil {
			return User{}, fmt.Errorf("verify refreshed ID token: %w", err)
		}
		return l.userFrom(idt)
	}
	info, err := l.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		return User{}, fmt.Errorf("userinfo: %w", err)
	}
	var claims map[string]any
	if err := info.Claims(&claims); err != nil {
		return User{}, fmt.Errorf("userinfo claims: %w", err)
	}
	return l.userFromClaims(issuer, info.Subject, claims)
}
