package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// userSession is one sign-in as the user_sessions table keeps it.
type userSession struct {
	ID           string
	User         User
	RefreshToken *string
	RefreshedAt  time.Time
	ExpiresAt    time.Time
	Ended        bool
	// ReadAt is the database's clock when the row was read: RefreshedAt
	// and ExpiresAt are dated by it.
	ReadAt time.Time
}

// at is the time session s is judged at (refresh due, expired): the
// database's clock when s was read, which dated RefreshedAt and ExpiresAt
// and by which the claim of a refresh is judged (claimRefresh); now, the
// console's clock, only when that is not known. A replica whose clock runs
// behind would otherwise serve groups past their refresh interval, and a
// session past its lifetime, by its skew
// (TestRevGov18ReplicaBehindServesGroupsPastTheirRefresh); one whose clock
// runs ahead would find refreshes due that the claim refuses, and sign its
// requests out while it waited on them.
func (s userSession) at(now time.Time) time.Time {
	if s.ReadAt.IsZero() {
		return now
	}
	return s.ReadAt
}

// Removes a few sessions past their lifetime; run at every sign-in, so the
// table never holds more than the sessions of one lifetime.
const deleteExpiredSessions = `DELETE FROM user_sessions WHERE id IN (
    SELECT id FROM user_sessions WHERE expires_at < now() - interval '1 day' LIMIT 100)`

const insertUserSession = `INSERT INTO user_sessions (id, issuer, subject, identity, refresh_token, expires_at)
    VALUES ($1, $2, $3, $4, $5, now() + $6::interval)`

// createSession records a new sign-in of u and returns its id. also runs
// in the same transaction, after the session's row is inserted (the
// sign-in's audit row): when it fails, nothing is recorded.
func createSession(ctx context.Context, db *pgxpool.Pool, u User, refreshToken string, lifetime time.Duration, also func(pgx.Tx) error) (string, error) {
	id := randomToken()
	var rt *string
	if refreshToken != "" {
		rt = &refreshToken
	}
	if _, err := db.Exec(ctx, deleteExpiredSessions); err != nil {
		return "", fmt.Errorf("remove expired sessions: %w", err)
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, insertUserSession, id, u.Issuer, u.Subject, u, rt, lifetime.String()); err != nil {
			return err
		}
		return also(tx)
	})
	if err != nil {
		return "", fmt.Errorf("record session: %w", err)
	}
	return id, nil
}

const selectUserSession = `SELECT identity, refresh_token, refreshed_at, expires_at, ended_at IS NOT NULL, now()
    FROM user_sessions WHERE id = $1`

// loadSession returns session id, or pgx.ErrNoRows.
func loadSession(ctx context.Context, db *pgxpool.Pool, id string) (userSession, error) {
	s := userSession{ID: id}
	var identity []byte
	err := db.QueryRow(ctx, selectUserSession, id).Scan(&identity, &s.RefreshToken, &s.RefreshedAt, &s.ExpiresAt, &s.Ended, &s.ReadAt)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(identity, &s.User); err != nil {
		return s, fmt.Errorf("session %s identity: %w", id, err)
	}
	return s, nil
}

// Claims the refresh of a session that is due: the one request whose
// UPDATE matches refreshes, so a refresh token is never spent twice;
// concurrent ones wait for it or, briefly, keep the identity they read
// (Login.settleRefresh). The claim lapses after $3 (refreshClaim) in case
// its holder dies.
const claimRefresh = `UPDATE user_sessions SET refreshing_until = now() + $3::interval
    WHERE id = $1 AND ended_at IS NULL -- an ended session stays ended
      AND refreshed_at <= now() - $2::interval
      AND (refreshing_until IS NULL OR refreshing_until < now())`

// claimSessionRefresh reports whether this caller should refresh session id.
func claimSessionRefresh(ctx context.Context, db *pgxpool.Pool, id string, every time.Duration) (bool, error) {
	tag, err := db.Exec(ctx, claimRefresh, id, every.String(), refreshClaim.String())
	if err != nil {
		return false, fmt.Errorf("claim session refresh: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

const updateRefreshed = `UPDATE user_sessions
    SET identity = $2, refresh_token = COALESCE($3, refresh_token), refreshed_at = now(), refreshing_until = NULL
    WHERE id = $1 AND ended_at IS NULL -- a session revoked meanwhile is not revived`

// errSessionEnded is storeRefreshed's answer for a session that ended
// (revoked, signed out) while the provider was being asked.
var errSessionEnded = errors.New("the session ended while it was being refreshed")

// storeRefreshed records what the provider said at a refresh and, when
// remember, updates the person's directory entry, in one transaction and
// only while the session is live: a refresh that an admin's revocation
// overtook returns errSessionEnded and changes nothing, so it cannot lift
// the revocation of the directory entry. The session's row is updated
// first, as RevokeSessions and endAtRefresh take it before the entry. When
// what grants the person roles changed since was (their groups, their
// email or whether it is verified), the change is audited in the same
// transaction (audit.ActionIdentityChange, with both).
func storeRefreshed(ctx context.Context, db *pgxpool.Pool, id string, was, u User, refreshToken string, remember bool) error {
	var rt *string
	if refreshToken != "" {
		rt = &refreshToken
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, updateRefreshed, id, u, rt)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errSessionEnded
		}
		// The directory (and the address kept with it) before the audit
		// chain, the order every action takes them in: a chain held while
		// waiting for an address another action is recording would wait
		// for that action, itself waiting for the chain.
		if remember {
			if err := rememberIn(ctx, tx, u); err != nil {
				return err
			}
		}
		if before, after := grantsOf(was), grantsOf(u); !before.equal(after) {
			e := audit.Event{Actor: u.Actor, Action: audit.ActionIdentityChange, Outcome: audit.OutcomeOK, ObjectType: "session",
				Reason: "the identity provider's answer to a refresh changed what grants roles", Before: before, After: after}
			if _, err := audit.Append(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store refreshed session: %w", err)
	}
	return nil
}

// grants is what of a person's identity grants them roles: role bindings
// may name their email when it is verified, and the groups map to roles.
type grants struct {
	Email         string   `json:"email"`
	EmailVerified bool     `json:"email_verified"`
	Groups        []string `json:"groups"`
}

func grantsOf(u User) grants {
	g := slices.Clone(u.Groups)
	slices.Sort(g)
	return grants{Email: u.Email, EmailVerified: u.EmailVerified, Groups: slices.Compact(g)}
}

// equal reports whether g and o grant the same: emails compared by the key
// email bindings match (replaypolicy.EmailKey), so a change that moves an
// address to or from a key (ASCII kate@ and the Kelvin sign's Kate@, which
// strings.EqualFold calls equal) is a change; others exactly.
func (g grants) equal(o grants) bool {
	kg, okg := replaypolicy.EmailKey(g.Email)
	ko, oko := replaypolicy.EmailKey(o.Email)
	sameEmail := okg == oko && kg == ko && (okg || g.Email == o.Email)
	return sameEmail && g.EmailVerified == o.EmailVerified && slices.Equal(g.Groups, o.Groups)
}

const endSession = `UPDATE user_sessions SET ended_at = now(), ended_reason = $2, refresh_token = NULL
    WHERE id = $1 AND ended_at IS NULL -- ended once, with the first reason`

// endUserSession ends session id with reason, in the caller's transaction,
// and reports whether it was live until then.
func endUserSession(ctx context.Context, tx pgx.Tx, id, reason string) (bool, error) {
	tag, err := tx.Exec(ctx, endSession, id, clip(reason, 500))
	if err != nil {
		return false, fmt.Errorf("end session: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// endAtRefresh ends session s of u with reason, in one transaction with its
// audit entry (action "auth.session_end"); when revoke, the provider refused
// the person, and their directory entry is marked revoked in the same
// transaction (revokeEntry).
func endAtRefresh(ctx context.Context, db *pgxpool.Pool, s userSession, reason string, revoke bool) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, endSession, s.ID, clip(reason, 500)); err != nil {
			return err
		}
		if revoke {
			if err := revokeEntry(ctx, tx, s.User.Issuer, s.User.Subject, reason); err != nil {
				return err
			}
		}
		e := audit.Event{Actor: s.User.Actor, Action: "auth.session_end", Outcome: audit.OutcomeOK, ObjectType: "session", Reason: reason}
		_, err := audit.Append(ctx, tx, e)
		return err
	})
	if err != nil {
		return fmt.Errorf("end session at refresh: %w", err)
	}
	return nil
}

// ActivePerson is someone with sessions that have not ended or expired.
type ActivePerson struct {
	User      User // as of their newest session
	Sessions  int
	LastLogin time.Time
}

const selectActivePeople = `SELECT DISTINCT ON (issuer, subject) identity,
       count(*) OVER (PARTITION BY issuer, subject), max(created_at) OVER (PARTITION BY issuer, subject)
    FROM user_sessions
    WHERE ended_at IS NULL AND expires_at > now()
    ORDER BY issuer, subject, created_at DESC`

// ActivePeople lists everyone with a live session, newest sign-in's
// identity first per person.
func ActivePeople(ctx context.Context, db *pgxpool.Pool) ([]ActivePerson, error) {
	rows, err := db.Query(ctx, selectActivePeople)
	if err != nil {
		return nil, fmt.Errorf("list active sessions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ActivePerson, error) {
		var p ActivePerson
		var identity []byte
		if err := row.Scan(&identity, &p.Sessions, &p.LastLogin); err != nil {
			return p, err
		}
		return p, json.Unmarshal(identity, &p.User)
	})
	if err != nil {
		return nil, fmt.Errorf("list active sessions: %w", err)
	}
	return out, nil
}

// Ends every live session of one person; the count is what was ended.
const revokePerson = `UPDATE user_sessions SET ended_at = now(), ended_reason = $3, refresh_token = NULL
    WHERE issuer = $1 AND subject = $2 AND ended_at IS NULL -- sessions already ended keep their reason`

// RevokeSessions ends every session of the person issuer|subject and marks
// their directory entry revoked (groups cleared: a replay worker then finds
// no right of theirs, so what they requested or approved is not published),
// in one transaction with its audit entry (action "auth.sessions_revoke",
// the count in After), and returns how many sessions it ended. Their next
// request is a signed-out one; signing in again reads their groups afresh
// and lifts the mark. It returns an invalid quarantine.Error for an empty
// issuer or subject.
func RevokeSessions(ctx context.Context, db *pgxpool.Pool, issuer, subject string, by User, meta audit.Event) (int64, error) {
	if issuer == "" || subject == "" {
		return 0, quarantine.Errorf(quarantine.EINVALID, "Choose a person: issuer and subject are required.")
	}
	var n int64
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		reason := "revoked by " + by.Attribution()
		tag, err := tx.Exec(ctx, revokePerson, issuer, subject, reason)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		if err := revokeEntry(ctx, tx, issuer, subject, reason); err != nil {
			return err
		}
		meta.Actor, meta.Action, meta.Outcome = by.Actor, "auth.sessions_revoke", audit.OutcomeOK
		meta.ObjectType, meta.ObjectID = "person", issuer+"|"+subject
		meta.After = map[string]any{"sessions_ended": n}
		_, err = audit.Append(ctx, tx, meta)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("revoke sessions of %s|%s: %w", issuer, subject, err)
	}
	return n, nil
}

// sessionIDKey is the key of the user_sessions id in the browser's session.
const sessionIDKey = "user_session"
