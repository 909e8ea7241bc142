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
// sign-in's audit row): when it fails, nothing is recorded. A sign-in
// reads the provider's answer as a refresh does, so it narrows the
// person's other live sessions as a refresh does (markNarrowedDue): those
// holding a grant u lacks are made due in the same transaction, under the
// lock of every live session of the person (lockPersonSessions), rather
// than serving what the console has just recorded the person lost for up
// to the refresh interval (TestRevGov21SignInNarrowedKeptByOtherSession).
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
		live, err := lockPersonSessions(ctx, tx, u.Issuer, u.Subject)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, insertUserSession, id, u.Issuer, u.Subject, u, rt, lifetime.String()); err != nil {
			return err
		}
		if err := markNarrowedDue(ctx, tx, live, id, u); err != nil {
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
// transaction (audit.ActionIdentityChange, with both). The person's other
// live sessions that hold something it took away (grants.narrowedTo) are
// made due in the same transaction (markNarrowedDue): each asks the
// provider at its next request rather than serving the groups the console
// has just recorded they lost for up to the refresh interval
// (TestRevGov20GroupRemovedKeptByOtherSession). They are judged by what
// each holds, not by what this session held: one signed in since with a
// group this session never had loses it too. A sign-in narrows the same
// way (createSession).
func storeRefreshed(ctx context.Context, db *pgxpool.Pool, id string, was, u User, refreshToken string, remember bool) error {
	var rt *string
	if refreshToken != "" {
		rt = &refreshToken
	}
	before, after := grantsOf(was), grantsOf(u)
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		live, err := lockPersonSessions(ctx, tx, u.Issuer, u.Subject)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, updateRefreshed, id, u, rt)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errSessionEnded
		}
		if err := markNarrowedDue(ctx, tx, live, id, u); err != nil {
			return err
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
		if !before.equal(after) {
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

// Locks every live session of one person, in the order of their ids. A
// transaction that changes several of them (one ends, is refreshed or is
// made by a sign-in, the others are made due) takes this first: two such
// transactions of one person's sessions (a laptop's refresh refused while
// the phone's reads fewer groups) would otherwise each hold its own row
// and wait for the other's, and one of them would fail on the deadlock.
const selectPersonSessionsForUpdate = `SELECT id, identity FROM user_sessions
    WHERE issuer = $1 AND subject = $2 AND ended_at IS NULL
    ORDER BY id FOR UPDATE`

// liveSession is one live session of a person as lockPersonSessions read
// it: its id and the identity it answers requests with.
type liveSession struct {
	ID   string
	User User
}

// lockPersonSessions locks the live sessions of issuer|subject in the
// caller's transaction (selectPersonSessionsForUpdate) and returns them as
// they are once locked.
func lockPersonSessions(ctx context.Context, tx pgx.Tx, issuer, subject string) ([]liveSession, error) {
	rows, err := tx.Query(ctx, selectPersonSessionsForUpdate, issuer, subject)
	if err != nil {
		return nil, fmt.Errorf("lock sessions of %s|%s: %w", issuer, subject, err)
	}
	live, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (liveSession, error) {
		var s liveSession
		var identity []byte
		if err := row.Scan(&s.ID, &identity); err != nil {
			return s, err
		}
		return s, json.Unmarshal(identity, &s.User)
	})
	if err != nil {
		return nil, fmt.Errorf("lock sessions of %s|%s: %w", issuer, subject, err)
	}
	return live, nil
}

// Makes the person's other live sessions due for a refresh: 'epoch' is
// older than any refresh interval, so the next request of each claims its
// refresh (claimRefresh) and no request serves its identity meanwhile
// (Login.settleRefresh waits for the refresh, as for any session that far
// past due). A session whose refresh is under way keeps its claim.
const markSessionsDue = `UPDATE user_sessions SET refreshed_at = 'epoch'
    WHERE issuer = $2 AND subject = $3 AND id <> $1
      AND ended_at IS NULL -- an ended session stays ended`

// markOthersDue makes every live session of issuer|subject but id due for
// a refresh, in the caller's transaction (markSessionsDue). It is for what
// one session learnt of the person at the provider and the others still
// hold otherwise: that the provider refused them, or that the provider
// honours a newer sign-in's refresh token only. A grant lost makes due only
// the sessions holding it (markNarrowedDue).
func markOthersDue(ctx context.Context, tx pgx.Tx, id, issuer, subject string) error {
	if _, err := tx.Exec(ctx, markSessionsDue, id, issuer, subject); err != nil {
		return fmt.Errorf("make the other sessions of %s|%s due: %w", issuer, subject, err)
	}
	return nil
}

// Makes the sessions named due for a refresh, as markSessionsDue does.
const markNamedSessionsDue = `UPDATE user_sessions SET refreshed_at = 'epoch'
    WHERE id = ANY($1)
      AND ended_at IS NULL -- an ended session stays ended`

// markNarrowedDue makes due for a refresh, in the caller's transaction,
// every session of live (the person's sessions, locked by
// lockPersonSessions) but id whose grants u's narrow (grants.narrowedTo):
// the provider has just answered for the person, at a refresh of session
// id or at the sign-in that made it, without something those sessions
// still grant, so each asks the provider at its next request
// (markNamedSessionsDue). A session that grants no more than u keeps its
// refresh time.
func markNarrowedDue(ctx context.Context, tx pgx.Tx, live []liveSession, id string, u User) error {
	now := grantsOf(u)
	var due []string
	for _, s := range live {
		if s.ID != id && grantsOf(s.User).narrowedTo(now) {
			due = append(due, s.ID)
		}
	}
	if len(due) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, markNamedSessionsDue, due); err != nil {
		return fmt.Errorf("make the narrowed sessions of %s|%s due: %w", u.Issuer, u.Subject, err)
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

// narrowedTo reports whether o grants less than g: a group of g is not
// among o's, or g's email was verified (role bindings may name it) and o
// does not hold it verified any more (another address, by the key email
// bindings match, or the same one unverified). A grant gained is no
// narrowing: a session that does not hold it yet grants less, not more.
func (g grants) narrowedTo(o grants) bool {
	for _, group := range g.Groups {
		if _, found := slices.BinarySearch(o.Groups, group); !found {
			return true
		}
	}
	if !g.EmailVerified {
		return false
	}
	kg, okg := replaypolicy.EmailKey(g.Email)
	ko, oko := replaypolicy.EmailKey(o.Email)
	sameEmail := okg == oko && kg == ko && (okg || g.Email == o.Email)
	return !sameEmail || !o.EmailVerified
}

// endSession ends session $1 with reason $2, once (with the first reason,
// and one audit row: endSignIn), and returns whom it signed in.
const endSession = `UPDATE user_sessions SET ended_at = now(), ended_reason = $2, refresh_token = NULL
    WHERE id = $1 AND ended_at IS NULL -- ended once, with the first reason
RETURNING identity`

// endUserSession ends session id with reason, in the caller's transaction,
// and reports whether it was live until then.
func endUserSession(ctx context.Context, tx pgx.Tx, id, reason string) (bool, error) {
	tag, err := tx.Exec(ctx, endSession, id, clip(reason, 500))
	if err != nil {
		return false, fmt.Errorf("end session: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// Whom a sign-in signs in, while it is live.
const selectLiveIdentity = `SELECT identity FROM user_sessions WHERE id = $1 AND ended_at IS NULL`

// liveIdentity returns whom session id signs in, read in the caller's
// transaction; live is false when it ended or is gone.
func liveIdentity(ctx context.Context, tx pgx.Tx, id string) (who User, live bool, err error) {
	var identity []byte
	err = tx.QueryRow(ctx, selectLiveIdentity, id).Scan(&identity)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, false, nil
	}
	if err != nil {
		return User{}, false, fmt.Errorf("read session %s: %w", id, err)
	}
	if err := json.Unmarshal(identity, &who); err != nil {
		return User{}, false, fmt.Errorf("session %s identity: %w", id, err)
	}
	return who, true, nil
}

// endSignIn ends session id with reason, in the caller's transaction, with
// its auth.session_end audit row under the identity it signed in (meta is
// where the request that ended it came from, empty for none). ended is
// false, and nothing is appended, when the session had ended already: its
// end was recorded then. who is the identity it signed in when ended.
// It is for a sign-in that ends without its person signing out: a
// sign-out's auth.logout row says it ended (Logout).
func endSignIn(ctx context.Context, tx pgx.Tx, id, reason string, meta quarantine.RequestMeta) (who User, ended bool, err error) {
	var identity []byte
	err = tx.QueryRow(ctx, endSession, id, clip(reason, 500)).Scan(&identity)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, false, nil
	}
	if err != nil {
		return User{}, false, fmt.Errorf("end session: %w", err)
	}
	if err := json.Unmarshal(identity, &who); err != nil {
		return User{}, false, fmt.Errorf("ended session %s identity: %w", id, err)
	}
	e := audit.NewEvent(who.Actor, meta, audit.ActionSessionEnd)
	e.ObjectType, e.Reason = "session", reason
	if _, err := audit.Append(ctx, tx, e); err != nil {
		return User{}, false, err
	}
	return who, true, nil
}

// pastLifetime is why a sign-in that a request found past its lifetime
// ended (endPastLifetime).
const pastLifetime = "the sign-in reached the end of its lifetime"

// endPastLifetime ends session id, which a request found past its
// lifetime, in a transaction of its own with its auth.session_end row
// (endSignIn), whether or not the request's client still waits
// (audit.Detached). A session that ended meanwhile is left as it ended.
func endPastLifetime(ctx context.Context, db *pgxpool.Pool, id string) error {
	ctx, cancel := audit.Detached(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		_, _, err := endSignIn(ctx, tx, id, pastLifetime, quarantine.RequestMeta{})
		return err
	})
	if err != nil {
		return fmt.Errorf("end a session past its lifetime: %w", err)
	}
	return nil
}

// Whether the same person signed in after session $1, in any session,
// live or ended: a provider that keeps one refresh token per person and
// client (Dex) dropped session $1's at that sign-in, and refuses it since,
// whatever became of the newer session. Asking for a live one took a
// refusal after the person signed out of the newer session (or it ended
// at a failed refresh) for the provider removing them: revoked, their
// approvals voided and their jobs blocked for good, though nobody removed
// them. A person removed at the provider is still found out through the
// newest live sign-in's token (refreshNewest), and one whose every newer
// session ended ages out of the directory as a signed-out person does.
const selectNewerSignIn = `SELECT EXISTS (SELECT 1 FROM user_sessions n
    WHERE n.issuer = $2 AND n.subject = $3 AND n.id <> $1
      AND n.created_at > (SELECT created_at FROM user_sessions WHERE id = $1))`

// The person's newest live sign-in holding a refresh token: the one whose
// token a provider that keeps one per person and client honours.
const selectNewestSignIn = `SELECT id FROM user_sessions
    WHERE issuer = $1 AND subject = $2
      AND ended_at IS NULL AND expires_at > now() AND refresh_token IS NOT NULL
    ORDER BY created_at DESC, id DESC LIMIT 1`

// newestSignIn returns the id of the newest live session of issuer|subject
// that holds a refresh token (selectNewestSignIn); found is false when
// there is none.
func newestSignIn(ctx context.Context, db *pgxpool.Pool, issuer, subject string) (id string, found bool, err error) {
	err = db.QueryRow(ctx, selectNewestSignIn, issuer, subject).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("find the newest sign-in of %s|%s: %w", issuer, subject, err)
	}
	return id, true, nil
}

// signedInAgain is the reason a session ends when the provider refused its
// refresh token and the person signed in again since, elsewhere.
const signedInAgain = "signed in again elsewhere since; the identity provider keeps one sign-in per person, so it refused this one's refresh and this session ended"

// endAtRefresh ends session s with end's reason, in one transaction with
// its audit entry (action "auth.session_end"), and returns the reason it
// recorded, whether it revoked the person, and whether the refusal was
// superseded by a newer sign-in (below). When the provider refused
// the person (end.refused), their directory entry is marked revoked in
// the same transaction (revokeEntry) and their other live sessions are
// made due (markOthersDue), so each asks the provider at its next request
// instead of signing them in, for up to the refresh interval, with what
// the console has just recorded the provider no longer vouches for
// (TestRevGov20RefusedPersonKeepsOtherSession).
//
// A provider that keeps one refresh token per person and client (Dex
// does) drops a session's token when the person signs in again elsewhere,
// and answers its next refresh with the same error as for a person it
// removed. So when the provider refused this session's refresh token
// (end.tokenRefused) while a live session of the same person, signed in
// after it, holds a refresh token, the refusal says nothing about the
// person: this session ends (reason signedInAgain), the entry is not
// revoked, and the person's other sessions are made due. The caller then
// asks the provider at once through the token it honours, the newest
// session's (Login.refreshNewest): a refusal of the newest sign-in's token
// is the one that revokes (TestRevGov20SecondSignInRevokesThePerson,
// TestRevGov20RemovedPersonKeepsAuthorityThroughIdleNewerSession). The decision is taken under
// the lock of every live session of the person (lockPersonSessions): a
// newer session refused at the same moment either has ended already, and
// this refusal revokes, or ends after it and revokes itself.
func endAtRefresh(ctx context.Context, db *pgxpool.Pool, s userSession, end refreshEnd) (reason string, revoked, superseded bool, err error) {
	issuer, subject := s.User.Issuer, s.User.Subject
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		reason, revoked, superseded = end.reason, end.refused, false
		if _, err := lockPersonSessions(ctx, tx, issuer, subject); err != nil {
			return err
		}
		if end.tokenRefused {
			if err := tx.QueryRow(ctx, selectNewerSignIn, s.ID, issuer, subject).Scan(&superseded); err != nil {
				return fmt.Errorf("look for a newer sign-in: %w", err)
			}
		}
		if superseded {
			reason, revoked = signedInAgain, false
		}
		if _, err := tx.Exec(ctx, endSession, s.ID, clip(reason, 500)); err != nil {
			return err
		}
		if revoked || superseded {
			if err := markOthersDue(ctx, tx, s.ID, issuer, subject); err != nil {
				return err
			}
		}
		if revoked {
			if err := revokeEntry(ctx, tx, issuer, subject, reason); err != nil {
				return err
			}
		}
		e := audit.Event{Actor: s.User.Actor, Action: "auth.session_end", Outcome: audit.OutcomeOK, ObjectType: "session", Reason: reason}
		_, err := audit.Append(ctx, tx, e)
		return err
	})
	if err != nil {
		return "", false, false, fmt.Errorf("end session at refresh: %w", err)
	}
	return reason, revoked, superseded, nil
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
		// In the order endAtRefresh and storeRefreshed lock them, which
		// the UPDATE's own scan need not follow.
		if _, err := lockPersonSessions(ctx, tx, issuer, subject); err != nil {
			return err
		}
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
