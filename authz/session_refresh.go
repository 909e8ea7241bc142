package authz

import (
	"context"
	"errors"
	"fmt"

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
// error, or with a token that does not verify or names someone else), their
// directory entry is also marked revoked in the same transaction, so what
// they requested or approved is not published while nobody is signed in
// (Authority). A session an admin revoked while it was being refreshed
// stays ended, and the refresh changes nothing (storeRefreshed). The error
// is for failing to read the database.
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
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && (s.Ended || !l.now().Before(s.ExpiresAt))) {
		l.sessions.Remove(ctx, sessionIDKey) // this browser session signs nobody in any more
		return User{}, false, nil
	}
	if err != nil {
		return User{}, false, fmt.Errorf("read session: %w", err)
	}
	if l.now().Sub(s.RefreshedAt) < l.cfg.RefreshInterval {
		return s.User, true, nil
	}
	mine, err := claimSessionRefresh(ctx, l.db, id, l.cfg.RefreshInterval)
	if err != nil {
		return User{}, false, err
	}
	if !mine { // another request is refreshing, or it was just done
		return s.User, true, nil
	}
	u, end := l.refresh(ctx, s)
	if end.ended {
		l.sessions.Remove(ctx, sessionIDKey) // revoked or signed out meanwhile, and audited then
		return User{}, false, nil
	}
	if end.reason == "" {
		return u, true, nil
	}
	if err := endAtRefresh(ctx, l.db, s, end.reason, end.refused); err != nil {
		return User{}, false, err
	}
	l.sessions.Remove(ctx, sessionIDKey)
	l.log.Info("session ended at refresh", "issuer", s.User.Issuer, "subject", s.User.Subject, "reason", end.reason, "directory_revoked", end.refused)
	return User{}, false, nil
}

// refreshEnd is why a refresh ends a session: the reason, and whether the
// provider refused the person (rather than the refresh being impossible or
// failing on our side or on the way); or that the session ended while the
// provider was being asked (ended: nothing more to record).
type refreshEnd struct {
	reason  string
	refused bool
	ended   bool
}

// refresh reads the person again from the provider. It returns the new
// identity, or why the session must end.
func (l *Login) refresh(ctx context.Context, s userSession) (User, refreshEnd) {
	if s.RefreshToken == nil {
		return User{}, refreshEnd{reason: "the identity provider gave no refresh token, so the groups cannot be read again; sign in again"}
	}
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	tok, err := l.oauth.TokenSource(ctx, &oauth2.Token{RefreshToken: *s.RefreshToken}).Token()
	if err != nil {
		l.log.Warn("session refresh refused", "subject", s.User.Subject, "err", err)
		// The provider's own error answer (invalid_grant: the grant was
		// revoked, the person removed) refuses the person; a network error
		// or a timeout says nothing about them.
		var answered *oauth2.RetrieveError
		return User{}, refreshEnd{reason: "the identity provider did not refresh the sign-in", refused: errors.As(err, &answered)}
	}
	u, err := l.refreshedIdentity(ctx, tok, s.User.Issuer)
	if err != nil {
		l.log.Warn("session refresh unreadable", "subject", s.User.Subject, "err", err)
		return User{}, refreshEnd{reason: "the identity provider's answer to the refresh could not be verified", refused: true}
	}
	if !u.SameIdentity(s.User.Actor) { // the same identity; another one with the same email is someone else
		return User{}, refreshEnd{reason: "the identity provider refreshed the sign-in as someone else", refused: true}
	}
	err = storeRefreshed(ctx, l.db, s.ID, s.User, u, tok.RefreshToken, l.directory != nil)
	if errors.Is(err, errSessionEnded) {
		return User{}, refreshEnd{ended: true}
	}
	if err != nil {
		l.log.Error("store refreshed session", "err", err)
		return User{}, refreshEnd{reason: "the refreshed sign-in could not be stored"}
	}
	return u, refreshEnd{}
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
	return l.userFromClaims(issuer, info.Subject, claims), nil
}
