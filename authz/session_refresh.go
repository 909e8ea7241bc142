package authz

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"

	"github.com/quarantine-console/quarantine/audit"
)

// Current returns the person signed in on the request's session, reading
// the session's record (user_sessions) on every call, so a session an admin
// revoked or that expired is signed out at once. When the groups are older
// than the refresh interval, one request reads them again from the provider
// with the refresh token; if the provider refuses (or gave no refresh
// token), the session ends (audited as "auth.session_end") and Current
// reports nobody. The error is for failing to read the database.
func (l *Login) Current(ctx context.Context) (User, bool, error) {
	id := l.sessions.GetString(ctx, sessionIDKey)
	if id == "" {
		return User{}, false, nil
	}
	s, err := loadSession(ctx, l.db, id)
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
	u, reason := l.refresh(ctx, s)
	if reason == "" {
		return u, true, nil
	}
	if err := endUserSession(ctx, l.db, id, reason); err != nil {
		return User{}, false, err
	}
	l.sessions.Remove(ctx, sessionIDKey)
	l.log.Info("session ended at refresh", "issuer", s.User.Issuer, "subject", s.User.Subject, "reason", reason)
	e := audit.Event{Actor: s.User.Actor, Action: "auth.session_end", Outcome: audit.OutcomeOK, ObjectType: "session", Reason: reason}
	if _, err := audit.AppendFunc(ctx, l.db, e); err != nil {
		return User{}, false, fmt.Errorf("audit session end: %w", err)
	}
	return User{}, false, nil
}

// refresh reads the person again from the provider. It returns the new
// identity, or why the session must end.
func (l *Login) refresh(ctx context.Context, s userSession) (User, string) {
	if s.RefreshToken == nil {
		return User{}, "the identity provider gave no refresh token, so the groups cannot be read again; sign in again"
	}
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	tok, err := l.oauth.TokenSource(ctx, &oauth2.Token{RefreshToken: *s.RefreshToken}).Token()
	if err != nil {
		l.log.Warn("session refresh refused", "subject", s.User.Subject, "err", err)
		return User{}, "the identity provider did not refresh the sign-in"
	}
	u, err := l.refreshedIdentity(ctx, tok, s.User.Issuer)
	if err != nil {
		l.log.Warn("session refresh unreadable", "subject", s.User.Subject, "err", err)
		return User{}, "the identity provider's answer to the refresh could not be verified"
	}
	if !u.SameIdentity(s.User.Actor) { // the same identity; another one with the same email is someone else
		return User{}, "the identity provider refreshed the sign-in as someone else"
	}
	if err := storeRefreshed(ctx, l.db, s.ID, u, tok.RefreshToken); err != nil {
		l.log.Error("store refreshed session", "err", err)
		return User{}, "the refreshed sign-in could not be stored"
	}
	if l.directory != nil {
		if err := l.directory.Remember(ctx, u); err != nil {
			l.log.Warn("remember refreshed identity", "err", err)
		}
	}
	return u, ""
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
